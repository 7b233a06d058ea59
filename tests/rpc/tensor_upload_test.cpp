// Weights written into a worker's buffer in pieces (runtime/tensor_upload.h): the piece size
// follows the buffer type's endpoint, and a tensor written in pieces reads back byte for
// byte, with an offset and a size that is not a multiple of the piece.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "devices/devices.h"
#include "rpc_test_util.h"
#include "runtime/tensor_upload.h"

namespace {

TEST(TensorUpload, PieceSizeFollowsTheEndpoint) {
    using ggdiff::upload_piece_bytes;
    const size_t local = size_t(8) << 20, remote = size_t(64) << 20;
    EXPECT_EQ(upload_piece_bytes("RPC0[127.0.0.1:50052]"), local);
    EXPECT_EQ(upload_piece_bytes("RPC1[localhost:50052]"), local);
    EXPECT_EQ(upload_piece_bytes("RPC0[[::1]:50052]"), local);
    EXPECT_EQ(upload_piece_bytes("RPC0[192.168.1.20:50052]"), remote);
    EXPECT_EQ(upload_piece_bytes("RPC2[gpu-box.lan:50052]"), remote);
    EXPECT_EQ(upload_piece_bytes("RPC0[127host.example:1]"), remote);
    EXPECT_EQ(upload_piece_bytes("CPU"), 0u);
    EXPECT_EQ(upload_piece_bytes("CUDA0"), 0u);
    EXPECT_EQ(upload_piece_bytes("RPC0"), 0u);  // no endpoint in the name: one write
}

TEST(TensorUpload, PiecesOnAWorkerReadBackExactly) {
    rpc_test::Worker worker;
    std::string error;
    ASSERT_TRUE(worker.start(&error)) << error;
    ggdiff::load_backends();
    std::vector<std::string> added;
    ggdiff::Status st = ggdiff::add_rpc_servers(worker.endpoint(), &added);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(added.size(), 1u);
    ggml_backend_dev_t dev = ggdiff::find_device(added[0]);
    ASSERT_NE(dev, nullptr);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    ASSERT_EQ(ggdiff::upload_piece_bytes(ggml_backend_buft_name(buft)), size_t(8) << 20);

    // 21 MiB + 12 bytes of f32: two whole pieces and a partial one, over the hash threshold.
    const int64_t n = (int64_t(21) << 18) + 3;
    ggml_init_params p = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    ASSERT_NE(buf, nullptr);
    std::vector<uint32_t> want(static_cast<size_t>(n));
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint32_t>(i * 2654435761u);
    const size_t bytes = want.size() * sizeof(uint32_t);
    ggdiff::set_tensor_in_pieces(t, want.data(), 0, bytes);
    std::vector<uint32_t> got(want.size());
    ggml_backend_tensor_get(t, got.data(), 0, bytes);
    EXPECT_EQ(got, want);

    // A rewrite of a middle stretch (offset not piece-aligned), as a LoRA patch does.
    const size_t offset = 4096 * 3 + 8, size = (size_t(9) << 20) + 20;
    std::vector<uint8_t> patch(size, 0x5a);
    ggdiff::set_tensor_in_pieces(t, patch.data(), offset, size);
    ggml_backend_tensor_get(t, got.data(), 0, bytes);
    std::vector<uint8_t> expect(reinterpret_cast<uint8_t*>(want.data()),
                                reinterpret_cast<uint8_t*>(want.data()) + bytes);
    std::fill(expect.begin() + offset, expect.begin() + offset + size, 0x5a);
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), reinterpret_cast<uint8_t*>(got.data())));
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    worker.stop();
}

}  // namespace
