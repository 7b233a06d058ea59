// The PyTorch-file reader: files written by torch itself (the fuzz seeds, made by
// tests/fuzz/make_pytorch_seeds.py with Debian's python3-torch) and by tests/support/
// torch_writer.h, read as data; hostile files (code in the pickle, deep nesting, huge claims,
// deflated or overlapping zip entries, entries outside the archive, truncation) refused with
// errors that name the global or the problem.
#include <gtest/gtest.h>
#include <time.h>

#include "../support/torch_writer.h"
#include "core/log.h"
#include "io/checkpoint_file.h"
#include "io/gguf_writer.h"
#include "io/mapped_file.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

const std::string kSeeds = std::string(GGDIFF_SOURCE_DIR) + "/tests/fuzz/corpus/pytorch/";

Result<CheckpointHeader> read_bytes_header(const std::string& bytes) {
    return read_checkpoint_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string error_of(const std::string& bytes) {
    auto h = read_bytes_header(bytes);
    EXPECT_FALSE(h.ok()) << "accepted";
    return h.ok() ? "" : h.status().message();
}

std::string seed_error(const std::string& name) {
    TensorIndex ix;
    const Status st = ix.add(kSeeds + name);
    EXPECT_FALSE(st.ok()) << name;
    return st.message();
}

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<float> values(const TensorIndex& ix, const std::string& name) {
    std::vector<float> v;
    const TensorInfo* t = ix.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t) {
        EXPECT_TRUE(ix.read_f32(*t, v).ok()) << name;
    }
    return v;
}

TorchTensor f16(const std::string& name, std::vector<int64_t> shape, uint32_t seed = 1) {
    TorchTensor t;
    t.name = name;
    t.shape = shape;
    t.data = f16_bytes(pattern(numel(shape), seed));
    return t;
}

TorchTensor f32(const std::string& name, std::vector<int64_t> shape, uint32_t seed = 1) {
    TorchTensor t;
    t.name = name;
    t.storage_type = "FloatStorage";
    t.shape = shape;
    t.data = to_bytes(pattern(numel(shape), seed));
    return t;
}

// ---------------------------------------------------------------- files torch wrote

TEST(PytorchReader, ReadsTorchZipFile) {
    TensorIndex ix;
    ASSERT_TRUE(ix.add(kSeeds + "flat.pt").ok());
    ASSERT_EQ(ix.size(), 5u);
    const TensorInfo* w = ix.find("model.diffusion_model.input_blocks.0.0.weight");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->dtype, DType::F16);
    EXPECT_EQ(w->shape, (std::vector<int64_t>{8, 4, 3, 3}));
    // torch.rand(generator seed 1) * 2 - 1, as torch printed it.
    const std::vector<float> b = values(ix, "model.diffusion_model.input_blocks.0.0.bias");
    ASSERT_EQ(b.size(), 8u);
    EXPECT_NEAR(b[0], 0.515263f, 1e-6);
    EXPECT_NEAR(b[1], -0.441378f, 1e-6);
    EXPECT_EQ(ix.find("first_stage_model.decoder.conv_in.weight")->dtype, DType::BF16);
    const TensorInfo* ids =
        ix.find("cond_stage_model.transformer.text_model.embeddings.position_ids");
    ASSERT_NE(ids, nullptr);
    EXPECT_EQ(ids->dtype, DType::I64);
    EXPECT_EQ(ids->shape, (std::vector<int64_t>{1, 8}));
    const int64_t* raw = reinterpret_cast<const int64_t*>(ix.raw(*ids));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(raw[i], i);
}

TEST(PytorchReader, LegacyFileGivesTheSameTensors) {
    TensorIndex zip, legacy;
    ASSERT_TRUE(zip.add(kSeeds + "flat.pt").ok());
    ASSERT_TRUE(legacy.add(kSeeds + "legacy.pt").ok());
    ASSERT_EQ(zip.size(), legacy.size());
    for (const TensorInfo& t : zip.tensors()) {
        const TensorInfo* o = legacy.find(t.name);
        ASSERT_NE(o, nullptr) << t.name;
        EXPECT_EQ(o->shape, t.shape);
        EXPECT_EQ(o->dtype, t.dtype);
        ASSERT_EQ(o->nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(zip.raw(t), legacy.raw(*o), t.nbytes), 0) << t.name;
    }
    auto map = MappedFile::open(kSeeds + "legacy.pt");
    ASSERT_TRUE(map.ok());
    auto h = read_checkpoint_header(**map);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->format, "pytorch (legacy)");
}

TEST(PytorchReader, LightningCheckpointReadsItsStateDict) {
    auto map = MappedFile::open(kSeeds + "lightning.ckpt");
    ASSERT_TRUE(map.ok());
    auto h = read_checkpoint_header(**map);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(h->format, "pytorch");
    // The state dict's names as they are: no "state_dict." prefix, no optimizer state.
    ASSERT_EQ(h->tensors.size(), 5u);
    EXPECT_EQ(h->tensors[0].name, "model.diffusion_model.input_blocks.0.0.weight");
    EXPECT_EQ(h->metadata["global_step"], "470000");
    EXPECT_EQ(h->metadata["pytorch-lightning_version"], "1.4.2");
    TensorIndex flat, ckpt;
    ASSERT_TRUE(flat.add(kSeeds + "flat.pt").ok());
    ASSERT_TRUE(ckpt.add(kSeeds + "lightning.ckpt").ok());
    EXPECT_EQ(values(flat, "alphas_cumprod"), values(ckpt, "alphas_cumprod"));
}

TEST(PytorchReader, EmbeddingLoraEsrganAndViews) {
    TensorIndex emb;
    ASSERT_TRUE(emb.add(kSeeds + "embedding.pt").ok());
    ASSERT_NE(emb.find("string_to_param.*"), nullptr);  // an nn.Parameter
    EXPECT_EQ(emb.find("string_to_param.*")->shape, (std::vector<int64_t>{2, 16}));
    EXPECT_EQ(emb.find("string_to_token.*")->shape, std::vector<int64_t>{});

    // BasicSR keeps 'params' and 'params_ema'; the EMA weights (params + 1 here) are read.
    TensorIndex esr;
    ASSERT_TRUE(esr.add(kSeeds + "esrgan.pth").ok());
    ASSERT_EQ(esr.size(), 2u);
    const std::vector<float> bias = values(esr, "conv_first.bias");
    ASSERT_EQ(bias.size(), 4u);
    EXPECT_NEAR(bias[0], 1.515f, 2e-3);

    TensorIndex lora;
    ASSERT_TRUE(lora.add(kSeeds + "lora.ckpt").ok());
    EXPECT_EQ(lora.size(), 3u);
    EXPECT_EQ(values(lora, "lora_unet_down_blocks_0_attentions_0_proj_in.alpha"),
              std::vector<float>{4.0f});

    // Three views of one 64-element storage: [0, 16), [16, 48), [60, 64).
    TensorIndex views;
    ASSERT_TRUE(views.add(kSeeds + "views.pt").ok());
    const std::vector<float> a = values(views, "a"), b = values(views, "b"), c = values(views, "c");
    ASSERT_EQ(a.size(), 16u);
    ASSERT_EQ(b.size(), 32u);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(views.find("b")->offset, views.find("a")->offset + 64);
    EXPECT_EQ(views.find("c")->offset, views.find("a")->offset + 240);
}

TEST(PytorchReader, HostileTorchFilesAreRefusedByName) {
    EXPECT_TRUE(contains(seed_error("evil_os_system.pt"), "refused a call of 'posix.system'"));
    EXPECT_TRUE(contains(seed_error("evil_eval.pt"), "refused a call of '__builtin__.eval'"));
    EXPECT_TRUE(contains(seed_error("module.pt"), "'torch.nn.modules.linear.Linear'"));
    EXPECT_TRUE(contains(seed_error("plain_pickle.pkl"), "'posix.system'"));
    const std::string nc = seed_error("noncontiguous.pt");
    EXPECT_TRUE(contains(nc, "tensor 't' is not contiguous")) << nc;
    EXPECT_TRUE(contains(nc, "stride [1, 5]")) << nc;
    EXPECT_TRUE(contains(seed_error("deep.pt"), "nested deeper than 32 levels"));
    const std::string deflated = seed_error("deflated.pt");
    EXPECT_TRUE(contains(deflated, "'flat/data.pkl' is deflated")) << deflated;
}

// ---------------------------------------------------------------- files written here

TEST(PytorchReader, WriterRoundTripNestedAndShared) {
    TorchTensor shared = f32("state_dict/w", {2, 3}, 7);
    shared.key = "s";
    shared.data = to_bytes(pattern(10, 7));
    TorchTensor tail = shared;
    tail.name = "state_dict/tail";
    tail.shape = {4};
    tail.offset = 6;
    TorchTensor bf = f16("state_dict/sub/h", {5});
    bf.storage_type = "BFloat16Storage";
    const std::vector<TorchTensor> tensors = {shared, tail, f16("state_dict/sub/x", {3, 2}), bf};
    for (bool legacy : {false, true}) {
        SCOPED_TRACE(legacy ? "legacy" : "zip");
        const std::string bytes = legacy ? torch_legacy(tensors) : torch_zip(tensors);
        auto h = read_bytes_header(bytes);
        ASSERT_TRUE(h.ok()) << h.status().message();
        ASSERT_EQ(h->tensors.size(), 4u);
        EXPECT_EQ(h->tensors[0].name, "w");
        EXPECT_EQ(h->tensors[1].name, "tail");
        EXPECT_EQ(h->tensors[2].name, "sub.x");
        EXPECT_EQ(h->tensors[3].name, "sub.h");
        EXPECT_EQ(h->tensors[3].dtype, DType::BF16);
        EXPECT_EQ(h->tensors[1].offset, h->tensors[0].offset + 24);
        const std::vector<float> v = pattern(10, 7);
        float got = 0;
        std::memcpy(&got, bytes.data() + h->tensors[1].offset, 4);
        EXPECT_EQ(got, v[6]);
        const std::vector<float> x = pattern(6);
        std::vector<ggml_fp16_t> xh(6);
        std::memcpy(xh.data(), bytes.data() + h->tensors[2].offset, 12);
        EXPECT_EQ(ggml_fp16_to_fp32(xh[5]), ggml_fp16_to_fp32(ggml_fp32_to_fp16(x[5])));
    }
}

TEST(PytorchReader, LightningCallbacksKeyedByClassAreData) {
    // Lightning 1.x keys callback states by the callback's class: naming a global is allowed,
    // calling one is not.
    PickleBytes p;
    p.empty_dict().mark().str("callbacks").empty_dict().mark();
    p.global("pytorch_lightning.callbacks.model_checkpoint", "ModelCheckpoint");
    p.empty_dict().setitems().str("state_dict").empty_dict().mark().str("w");
    p.global("torch._utils", "_rebuild_tensor_v2").mark();
    p.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(2);
    p.tuple().op('Q').integer(0).ints({2}).ints({1}).op('\x89');
    p.global("collections", "OrderedDict").op(')').reduce().tuple().reduce();
    p.setitems().setitems().stop();
    const std::string bytes =
        zip_archive({{"archive/data.pkl", p.b}, {"archive/data/0", std::string(8, '\0')}});
    auto h = read_bytes_header(bytes);
    ASSERT_TRUE(h.ok()) << h.status().message();
    ASSERT_EQ(h->tensors.size(), 1u);
    EXPECT_EQ(h->tensors[0].name, "w");
}

// A zip around one pickle whose one tensor 'w' is a 4-element F32 storage "0".
std::string zip_with_pickle(const std::string& pickle,
                            const std::string& data = std::string(16, 0)) {
    return zip_archive({{"archive/data.pkl", pickle}, {"archive/data/0", data}});
}

std::string call_pickle(const std::string& module, const std::string& name) {
    PickleBytes p;
    p.empty_dict().mark().str("x").global(module, name).mark().str("echo pwned").tuple().reduce();
    return p.setitems().stop().b;
}

TEST(PytorchReader, CallsOfAnyOtherGlobalAreRefusedByName) {
    for (const auto& [module, name] :
         std::vector<std::pair<std::string, std::string>>{{"os", "system"},
                                                          {"builtins", "eval"},
                                                          {"builtins", "exec"},
                                                          {"subprocess", "Popen"},
                                                          {"torch", "load"},
                                                          {"numpy.core.multiarray", "_reconstruct"},
                                                          {"torch._utils", "_rebuild_qtensor"}}) {
        const std::string global = module + "." + name;
        SCOPED_TRACE(global);
        const std::string e = error_of(zip_with_pickle(call_pickle(module, name)));
        EXPECT_TRUE(contains(e, "refused a call of '" + global + "'")) << e;
        // The same as a legacy-format pickle, and through STACK_GLOBAL (protocol 4).
        EXPECT_TRUE(contains(error_of(call_pickle(module, name)), "'" + global + "'"));
        PickleBytes s;
        s.str(module).str(name).op('\x93').mark().str("x").tuple().reduce().stop();
        EXPECT_TRUE(contains(error_of(zip_with_pickle(s.b)), "'" + global + "'"));
    }
    // Objects made by NEWOBJ, INST and OBJ, and state set on a class by BUILD.
    PickleBytes newobj;
    newobj.global("os", "_wrap_close").op(')').op('\x81').stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(newobj.b)), "'os._wrap_close'"));
    PickleBytes inst;
    inst.mark().str("ls").raw("ios\nsystem\n").stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(inst.b)), "'os.system'"));
    PickleBytes obj;
    obj.mark().global("os", "system").str("ls").op('o').stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(obj.b)), "'os.system'"));
    PickleBytes build;
    build.global("os", "environ").empty_dict().op('b').stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(build.b)), "'os.environ'"));
    // Persistent ids that are not torch storages, and unknown storage types.
    PickleBytes pid;
    pid.mark().str("storage").global("os", "system").str("0").str("cpu").integer(1).tuple();
    pid.op('Q').stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(pid.b)), "'os.system' is not one ggdiff reads"));
    PickleBytes ext;
    ext.raw("\x82\x01").stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(ext.b)), "extension registry"));
}

TEST(PytorchReader, NestingAndSharingLimits) {
    const double t0 = cpu_now();
    // 1000 nested dicts: refused at 32.
    PickleBytes deep;
    for (int i = 0; i < 1000; ++i) deep.empty_dict().str("d");
    deep.empty_dict();
    for (int i = 0; i < 1000; ++i) deep.op('s');
    deep.stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(deep.b)), "nested deeper than 32 levels"));
    // A million MARKs and tuples nested a million deep cost nothing (no recursion).
    PickleBytes marks;
    for (int i = 0; i < 1000000; ++i) marks.op('(');
    marks.op(')');
    for (int i = 0; i < 1000000; ++i) marks.op('t');
    marks.stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(marks.b)), "not a dict of tensors"));
    // Dicts that share their children through the memo: 2^31 paths to one tensor.
    PickleBytes dag;
    dag.empty_dict().put(0).mark().str("w").global("torch._utils", "_rebuild_tensor_v2");
    dag.mark().mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu");
    dag.integer(4).tuple().op('Q').integer(0).ints({4}).ints({1}).op('\x89');
    dag.global("collections", "OrderedDict").op(')').reduce().tuple().reduce().setitems();
    for (int level = 1; level <= 31; ++level) {
        dag.empty_dict().mark().str("a").get(level - 1).str("b").get(level - 1).setitems();
        dag.put(level);
    }
    dag.stop();
    const std::string e = error_of(zip_with_pickle(dag.b));
    EXPECT_TRUE(contains(e, "more than")) << e;
    // A list appended to itself (a cycle) frees with the machine.
    PickleBytes cycle;
    cycle.op(']').put(0).get(0).op('a').stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(cycle.b)), "not a dict of tensors"));
    EXPECT_LT(cpu_now() - t0, 20.0);
}

TEST(PytorchReader, HugeClaimsAreRefused) {
    auto tensor_pickle = [](int64_t storage_numel, int64_t offset, std::vector<int64_t> shape) {
        PickleBytes p;
        p.empty_dict().mark().str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
        p.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu");
        p.integer(storage_numel).tuple().op('Q').integer(offset).ints(shape);
        std::vector<int64_t> stride(shape.size(), 1);
        for (size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
        p.ints(stride).op('\x89').global("collections", "OrderedDict").op(')').reduce();
        return p.tuple().reduce().setitems().stop().b;
    };
    // The storage claims more than its zip entry holds (16 bytes).
    std::string e = error_of(zip_with_pickle(tensor_pickle(5, 0, {5})));
    EXPECT_TRUE(contains(e, "storage entry 'archive/data/0' has 16 bytes but its pickle claims 20"))
        << e;
    e = error_of(zip_with_pickle(tensor_pickle(int64_t(1) << 62, 0, {4})));
    EXPECT_TRUE(contains(e, "overflows")) << e;
    // The tensor runs past its storage.
    e = error_of(zip_with_pickle(tensor_pickle(4, 2, {3})));
    EXPECT_TRUE(contains(e, "tensor 'w' has elements [2, 2 + 3)")) << e;
    e = error_of(zip_with_pickle(tensor_pickle(4, 0, {int64_t(1) << 40, int64_t(1) << 40})));
    EXPECT_TRUE(contains(e, "tensor 'w'")) << e;
    e = error_of(zip_with_pickle(tensor_pickle(4, (int64_t(1) << 62), {4})));
    EXPECT_TRUE(contains(e, "tensor 'w'")) << e;
    // A string that claims 2 GiB.
    PickleBytes s;
    s.raw("X\xff\xff\xff\x7f").stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(s.b)), "runs past the end of the pickle"));
    // A zip that claims a million entries in a tiny directory.
    std::string zip = zip_with_pickle(tensor_pickle(4, 0, {4}));
    const size_t end = zip.size() - 22;
    zip[end + 8] = zip[end + 10] = '\xff';
    zip[end + 9] = zip[end + 11] = '\xff';
    e = error_of(zip);
    EXPECT_TRUE(contains(e, "claims 65535 entries")) << e;
}

TEST(PytorchReader, ZipStructureProblemsAreNamed) {
    const std::vector<TorchTensor> one = {f32("w", {4})};
    const TorchPickle pk = torch_state_dict_pickle(one);
    // Deflated storage entry (the claim alone is refused: nothing is ever decompressed).
    std::vector<ZipFileSpec> files = torch_zip_files(one, pk);
    files[1].method = 8;
    std::string e = error_of(zip_archive(files));
    EXPECT_TRUE(contains(e, "'archive/data/0' is deflated")) << e;
    files[1].method = 12;
    EXPECT_TRUE(contains(error_of(zip_archive(files)), "bzip2"));
    // A missing storage entry.
    e = error_of(zip_archive({files[0]}));
    EXPECT_TRUE(contains(e, "tensor 'w': its storage entry 'archive/data/0' is not in the archive"))
        << e;
    // No data.pkl; two of them; TorchScript; big-endian.
    EXPECT_TRUE(contains(error_of(zip_archive({{"a/b.txt", "x"}})), "no <name>/data.pkl"));
    EXPECT_TRUE(contains(error_of(zip_archive({files[0], {"b/data.pkl", pk.pickle}})),
                         "two PyTorch pickles"));
    files = torch_zip_files(one, pk);
    files.push_back({"archive/constants.pkl", "x"});
    EXPECT_TRUE(contains(error_of(zip_archive(files)), "TorchScript"));
    files.back() = {"archive/byteorder", "big"};
    EXPECT_TRUE(contains(error_of(zip_archive(files)), "big-endian"));
    files.back() = {"archive/byteorder", "little"};
    EXPECT_TRUE(read_bytes_header(zip_archive(files)).ok());

    const std::string good = torch_zip(one);
    ASSERT_TRUE(read_bytes_header(good).ok());
    auto patch32 = [](std::string s, size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
        return s;
    };
    const size_t eocd = good.size() - 22;
    uint32_t cd = 0;
    std::memcpy(&cd, good.data() + eocd + 16, 4);
    // Central entry 0's local header offset (at +42) pointing past the data, or into the
    // middle of another entry; its sizes (+20, +24) running into the directory.
    e = error_of(patch32(good, cd + 42, cd + 10));
    EXPECT_TRUE(contains(e, "no local header")) << e;
    e = error_of(patch32(good, cd + 42, 0xfffffff0u));
    EXPECT_TRUE(contains(e, "no local header")) << e;
    e = error_of(patch32(patch32(good, cd + 20, cd), cd + 24, cd));
    EXPECT_TRUE(contains(e, "runs past the archive's data")) << e;
    // Entry 0 made long enough to cover entry 1's header: overlapping entries.
    uint32_t size1 = 0;
    std::memcpy(&size1, good.data() + cd + 24, 4);
    uint32_t next = 0;                // entry 1's local header offset
    const size_t cd1 = cd + 46 + 16;  // "archive/data.pkl" is 16 bytes
    std::memcpy(&next, good.data() + cd1 + 42, 4);
    std::string overlap = patch32(patch32(good, cd + 20, next), cd + 24, next);
    e = error_of(overlap);
    EXPECT_TRUE(contains(e, "overlap")) << e;
    // Two directory entries for one local header.
    std::string twice = patch32(good, cd1 + 42, 0);
    e = error_of(twice);
    EXPECT_TRUE(contains(e, "local header names another file")) << e;
    // The directory outside the file; no end record.
    e = error_of(patch32(good, eocd + 16, 0x7fffffff));
    EXPECT_TRUE(contains(e, "central directory")) << e;
    e = error_of(good.substr(0, good.size() - 4));
    EXPECT_TRUE(contains(e, "end-of-central-directory")) << e;
    // An encrypted entry.
    std::string enc = good;
    enc[cd + 8] = 1;
    EXPECT_TRUE(contains(error_of(enc), "encrypted"));
}

TEST(PytorchReader, EveryTruncationIsRefusedCleanly) {
    const std::vector<TorchTensor> tensors = {f16("state_dict/a", {3, 4}),
                                              f32("state_dict/b", {5})};
    for (bool legacy : {false, true}) {
        const std::string full = legacy ? torch_legacy(tensors) : torch_zip(tensors);
        ASSERT_TRUE(read_bytes_header(full).ok());
        for (size_t n = 0; n < full.size(); ++n) {
            auto h = read_bytes_header(full.substr(0, n));
            EXPECT_FALSE(h.ok()) << (legacy ? "legacy " : "zip ") << n;
        }
    }
}

TEST(PytorchReader, PlainPicklesAndOtherDataAreNotCheckpoints) {
    // A pickled dict without torch's magic number.
    PickleBytes p;
    p.empty_dict().stop();
    std::string e = error_of(p.b);
    EXPECT_TRUE(contains(e, "not a PyTorch file")) << e;
    // A legacy file whose storage list names a storage no tensor uses.
    const std::vector<TorchTensor> one = {f32("w", {2})};
    std::string legacy = torch_legacy(one);
    ASSERT_TRUE(read_bytes_header(legacy).ok());
    // Its 8-byte element count changed: the sizes disagree.
    legacy[legacy.size() - 8 - 8] = 3;
    e = error_of(legacy);
    EXPECT_TRUE(contains(e, "has 3 elements but its pickle claims 2")) << e;
    // A tensor in a list only: nothing to read.
    PickleBytes list;
    list.empty_dict().mark().str("l").op(']').setitems().stop();
    EXPECT_TRUE(contains(error_of(zip_with_pickle(list.b)), "holds no tensors"));
}

TEST(PytorchReader, ConvertsToGgufWithTheSameTensors) {
    const std::string dir = test_dir("pytorch_convert");
    const std::vector<TorchTensor> tensors = {f16("state_dict/a.weight", {4, 8}),
                                              f32("state_dict/a.bias", {4})};
    write_bytes(dir + "/m.ckpt", torch_zip(tensors));
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/m.ckpt").ok());
    EXPECT_EQ(values(ix, "a.bias"), pattern(4));
    ASSERT_TRUE(convert_to_gguf(ix, dir + "/m.gguf", -1).ok());
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/m.gguf").ok());
    ASSERT_EQ(back.size(), 2u);
    for (const char* name : {"a.weight", "a.bias"}) {
        EXPECT_EQ(back.find(name)->shape, ix.find(name)->shape) << name;
        EXPECT_EQ(values(back, name), values(ix, name)) << name;
    }
}

}  // namespace
}  // namespace ggdiff

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

// Diffusers / transformers folders that hold only PyTorch weights (diffusion_pytorch_model.bin,
// sharded pytorch_model-0000N-of-0000M.bin with an index); a safetensors file beside them wins.
TEST(PytorchReader, DiffusersFoldersWithBinWeights) {
    const std::string dir = test_dir("pytorch_diffusers_bin");
    make_dirs(dir + "/single");
    TorchTensor a;
    a.name = "x.weight";
    a.storage_type = "FloatStorage";
    a.shape = {3};
    a.data = to_bytes(pattern(3));
    write_bytes(dir + "/single/diffusion_pytorch_model.bin", torch_zip({a}));
    TensorIndex one;
    Status st = one.add(dir + "/single", "other.");
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(one.files().size(), 1u);
    EXPECT_EQ(one.files()[0], dir + "/single/diffusion_pytorch_model.bin");
    write_safetensors(dir + "/single/diffusion_pytorch_model.safetensors",
                      {f32_tensor("x.weight", {3})});
    TensorIndex both;
    ASSERT_TRUE(both.add(dir + "/single", "other.").ok());
    EXPECT_EQ(both.files()[0], dir + "/single/diffusion_pytorch_model.safetensors");

    make_dirs(dir + "/sharded");
    TorchTensor b = a;
    b.name = "y.weight";
    write_bytes(dir + "/sharded/pytorch_model-00001-of-00002.bin", torch_zip({a}));
    write_bytes(dir + "/sharded/pytorch_model-00002-of-00002.bin", torch_legacy({b}));
    write_bytes(dir + "/sharded/pytorch_model.bin.index.json",
                R"({"weight_map": {"x.weight": "pytorch_model-00001-of-00002.bin",
                                   "y.weight": "pytorch_model-00002-of-00002.bin"}})");
    TensorIndex shards;
    st = shards.add(dir + "/sharded", "other.");
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(shards.files().size(), 2u);
    EXPECT_EQ(shards.size(), 2u);
}

}  // namespace
}  // namespace ggdiff

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

// Legacy files can name a view of a storage: ('storage', type, root key, location, root size,
// (view key, offset, size)); a tensor at offset 1 of a view at offset 2 starts at element 3.
TEST(PytorchReader, LegacyStorageViews) {
    auto file = [](int64_t view_offset, int64_t view_size, int64_t tensor_offset) {
        std::string out =
            std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
        out += PickleBytes().raw("M\xe9\x03").stop().b;
        out += PickleBytes().empty_dict().stop().b;  // system info
        PickleBytes p;
        p.empty_dict().mark().str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
        p.mark().str("storage").global("torch", "FloatStorage").str("root").str("cpu").integer(8);
        p.mark().str("view").integer(view_offset).integer(view_size).tuple();
        p.tuple().op('Q').integer(tensor_offset).ints({3}).ints({1}).op('\x89');
        p.global("collections", "OrderedDict").op(')').reduce().tuple().reduce().setitems();
        out += p.stop().b;
        out += PickleBytes().op(']').mark().str("root").op('e').stop().b;
        std::vector<float> v(8);
        for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
        return out + le_bytes(8, 8) + to_bytes(v);
    };
    const std::string bytes = file(2, 4, 1);
    auto h = read_bytes_header(bytes);
    ASSERT_TRUE(h.ok()) << h.status().message();
    ASSERT_EQ(h->tensors.size(), 1u);
    float first = 0;
    std::memcpy(&first, bytes.data() + h->tensors[0].offset, 4);
    EXPECT_EQ(first, 3.0f);
    EXPECT_EQ(h->tensors[0].nbytes, 12u);
    // Past the view (offset 2 + 3 elements > 4), and a view past its root storage.
    std::string e = error_of(file(2, 4, 2));
    EXPECT_TRUE(contains(e, "tensor 'w' has elements")) << e;
    e = error_of(file(6, 4, 0));
    EXPECT_TRUE(contains(e, "storage view runs past its storage 'root'")) << e;
}

}  // namespace
}  // namespace ggdiff
