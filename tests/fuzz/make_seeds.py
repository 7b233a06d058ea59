#!/usr/bin/python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/ (committed; run again to rebuild).

Small valid (and a few nearly valid) inputs per fuzz target, each a few KB at most, so that
the replay in every build takes seconds and libFuzzer starts from real structure.
Needs Debian's python3-pil (scripts/setup.sh installs it) for the JPEG and WebP seeds.
"""
import io
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def out(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---------------------------------------------------------------------------- safetensors

DTYPES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
          "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape); data is a deterministic byte pattern."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = DTYPES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n]}
        data += bytes((i * 37 + 11) % 251 for i in range(n))
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    out("safetensors", "two_f32.safetensors",
        safetensors([("a.weight", "F32", [2, 3]), ("a.bias", "F32", [3])], {"format": "pt"}))
    out("safetensors", "all_dtypes.safetensors",
        safetensors([("t_" + d.lower(), d, [2, 2]) for d in DTYPES]))
    out("safetensors", "ldm_names.safetensors", safetensors([
        ("model.diffusion_model.input_blocks.0.0.weight", "F16", [4, 4, 3, 3]),
        ("model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight", "F16",
         [4, 8]),
        ("model.diffusion_model.out.2.bias", "F16", [4]),
        ("cond_stage_model.transformer.text_model.embeddings.token_embedding.weight", "F16",
         [16, 8]),
        ("cond_stage_model.transformer.text_model.embeddings.position_ids", "I64", [1, 4]),
        ("first_stage_model.decoder.conv_in.weight", "F16", [4, 4, 3, 3]),
        ("first_stage_model.decoder.mid.attn_1.q.weight", "F16", [4, 4, 1, 1]),
        ("model_ema.decay", "F32", []),
    ], {"modelspec.title": "seed", "ss_network_dim": "4"}))
    out("safetensors", "diffusers_unet.safetensors", safetensors([
        ("conv_in.weight", "F16", [4, 4, 3, 3]),
        ("time_embedding.linear_1.weight", "F16", [8, 4]),
        ("down_blocks.0.resnets.0.conv1.weight", "F16", [4, 4, 3, 3]),
        ("down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q.weight", "F16", [4, 4]),
        ("mid_block.resnets.0.norm1.weight", "F32", [4]),
        ("up_blocks.1.upsamplers.0.conv.weight", "F16", [4, 4, 3, 3]),
        ("conv_out.bias", "F32", [4]),
    ]))
    out("safetensors", "diffusers_vae.safetensors", safetensors([
        ("encoder.conv_in.weight", "F16", [4, 3, 3, 3]),
        ("encoder.down_blocks.0.resnets.0.conv1.weight", "F16", [4, 4, 3, 3]),
        ("decoder.mid_block.attentions.0.to_q.weight", "F16", [4, 4]),
        ("decoder.mid_block.attentions.0.query.weight", "F16", [4, 4]),
        ("quant_conv.weight", "F16", [8, 8, 1, 1]),
    ]))
    out("safetensors", "openclip_qkv.safetensors", safetensors([
        ("cond_stage_model.model.transformer.resblocks.0.attn.in_proj_weight", "F16", [12, 4]),
        ("cond_stage_model.model.transformer.resblocks.0.attn.in_proj_bias", "F16", [12]),
        ("cond_stage_model.model.token_embedding.weight", "F16", [8, 4]),
        ("cond_stage_model.model.text_projection", "F16", [4, 4]),
    ]))
    out("safetensors", "hf_clip.safetensors", safetensors([
        ("text_model.encoder.layers.0.self_attn.q_proj.weight", "BF16", [4, 4]),
        ("text_model.final_layer_norm.weight", "F32", [4]),
        ("text_projection.weight", "F16", [4, 4]),
    ]))
    out("safetensors", "empty_and_scalar.safetensors", safetensors([
        ("empty", "F32", [0, 4]), ("scalar", "F32", []), ("five_d", "F16", [1, 2, 1, 2, 2]),
    ], {"nested": "[[1, 2], {\"a\": null}]"}))
    out("safetensors", "quantizable.safetensors",
        safetensors([("model.diffusion_model.output_blocks.0.0.in_layers.2.weight", "F16",
                      [2, 256])]))
    # Nearly valid: the parser's error paths.
    good = safetensors([("w", "F32", [2])])
    out("safetensors", "truncated.safetensors", good[:-3])
    out("safetensors", "bad_offsets.safetensors",
        good.replace(b'"data_offsets": [0, 8]', b'"data_offsets": [4, 8]'))


# ---------------------------------------------------------------------------- GGUF

GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
        "I64": (27, 1, 8)}


def gguf(tensors, kvs, version=3, alignment=32):
    """tensors: (name, type, ne list innermost first); kvs: (key, kind, value)."""
    b = bytearray(b"GGUF")

    def s(x):
        x = x.encode() if isinstance(x, str) else x
        b.extend(struct.pack("<Q", len(x)) + x)

    b += struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, kind, value in kvs:
        s(key)
        if kind == "str":
            b += struct.pack("<I", 8)
            s(value)
        elif kind == "u32":
            b += struct.pack("<II", 4, value)
        elif kind == "f32":
            b += struct.pack("<If", 6, value)
        elif kind == "bool":
            b += struct.pack("<IB", 7, value)
        elif kind == "i64":
            b += struct.pack("<Iq", 11, value)
        elif kind == "arr_i32":
            b += struct.pack("<IIQ", 9, 5, len(value)) + struct.pack("<%di" % len(value), *value)
        elif kind == "arr_str":
            b += struct.pack("<IIQ", 9, 8, len(value))
            for v in value:
                s(v)
    data, offsets = bytearray(), []
    for name, tname, ne in tensors:
        t, blck, size = GGML[tname]
        n = 1
        for d in ne:
            n *= d
        nbytes = n // blck * size
        offsets.append(len(data))
        data += bytes((i * 13 + 5) % 97 for i in range(nbytes))
        if tname == "Q8_0" or tname == "Q4_K":  # keep the f16 scales small and finite
            for k in range(offsets[-1], len(data), size):
                data[k:k + 2] = b"\x00\x3c"
        data += bytes((-len(data)) % alignment)
    for (name, tname, ne), off in zip(tensors, offsets):
        s(name)
        b += struct.pack("<I", len(ne)) + struct.pack("<%dq" % len(ne), *ne)
        b += struct.pack("<IQ", GGML[tname][0], off)
    b += bytes((-len(b)) % alignment)
    return bytes(b + data)


def gguf_seeds():
    long_name = "model.diffusion_model.output_blocks.11.1.transformer_blocks.0.attn1.to_out.0.weight"
    out("gguf", "basic_v3.gguf", gguf(
        [("a.weight", "F32", [3, 2]), ("a.bias", "F16", [3]), ("ids", "I64", [4, 1])],
        [("general.name", "str", "seed"), ("general.alignment", "u32", 32),
         ("x.f", "f32", 0.5), ("x.b", "bool", 1), ("x.i", "i64", -3),
         ("x.arr", "arr_i32", [1, 2, 3])]))
    out("gguf", "quantized.gguf", gguf(
        [("model.diffusion_model.q8", "Q8_0", [32, 2]), ("model.diffusion_model.q4k", "Q4_K",
                                                         [256, 1])],
        [("general.architecture", "str", "sd1")]))
    out("gguf", "ggdiff_tables.gguf", gguf(
        [("ggdiff.t0", "F16", [4, 2]), ("b", "F32", [2])],
        [("ggdiff.format_version", "u32", 1), ("ggdiff.family", "str", "unknown"),
         ("ggdiff.tensor_names", "arr_str", [long_name, "b"]),
         ("ggdiff.tensor_shapes", "arr_str", ["2,1,4", "2"])]))
    out("gguf", "long_names_v2.gguf", gguf([(long_name, "F32", [2, 2])], [], version=2))
    out("gguf", "empty_tensor.gguf", gguf([("e", "F32", [0, 4]), ("s", "F32", [1])], []))
    out("gguf", "alignment_64.gguf",
        gguf([("w", "F32", [5])], [("general.alignment", "u32", 64)], alignment=64))


# ---------------------------------------------------------------------------- images

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(w, h, color, depth, rows, extra=b"", interlace=0, plte=None, trns=None):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace)
    body = png_chunk(b"IHDR", ihdr)
    if plte:
        body += png_chunk(b"PLTE", plte)
    if trns:
        body += png_chunk(b"tRNS", trns)
    raw = b"".join(b"\x00" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + body + extra + png_chunk(b"IDAT", zlib.compress(raw)) + \
        png_chunk(b"IEND", b"")


def adam7_png(im):
    """An RGB 8-bit PNG with Adam7 interlacing (PIL writes none)."""
    w, h = im.size
    px = im.load()
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
              (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        xs = range(x0, w, dx)
        for y in range(y0, h, dy):
            if len(xs):
                raw += b"\x00" + bytes(c for x in xs for c in px[x, y])
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + \
        png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


INFOTEXT = ("a lighthouse at dusk, (golden hour:1.2)\nNegative prompt: blurry\n"
            "Steps: 20, Sampler: Euler a, Schedule type: Karras, CFG scale: 7, Seed: 42, "
            "Size: 512x512, Model: sd15, Version: ggdiff 0.1.0")


def image_seeds():
    from PIL import Image
    rgb = [bytes((x * 40 + y * 7 + c * 90) % 256 for x in range(4) for c in range(3))
           for y in range(3)]
    text = png_chunk(b"tEXt", b"parameters\x00" + INFOTEXT.encode())
    ztxt = png_chunk(b"zTXt", b"parameters\x00\x00" + zlib.compress(INFOTEXT.encode()))
    itxt = png_chunk(b"iTXt", b"parameters\x00\x00\x00\x00\x00" + "caf\u00e9 \u65e5".encode())
    itxt_z = png_chunk(b"iTXt", b"parameters\x00\x01\x00en\x00\x00" +
                       zlib.compress(INFOTEXT.encode()))
    pngs = {
        "rgb_text.png": png(4, 3, 2, 8, rgb, text),
        "rgb_ztxt.png": png(4, 3, 2, 8, rgb, ztxt),
        "rgb_itxt.png": png(4, 3, 2, 8, rgb, itxt + itxt_z),
        "rgba.png": png(2, 2, 6, 8, [bytes(range(8)), bytes(range(8, 16))]),
        "grey.png": png(3, 2, 0, 8, [b"\x00\x80\xff", b"\x10\x20\x30"]),
        "grey_alpha.png": png(2, 1, 4, 8, [b"\x00\xff\x80\x40"]),
        "grey_1bit.png": png(8, 2, 0, 1, [b"\xa5", b"\x5a"]),
        "rgb16.png": png(2, 2, 2, 16, [bytes(range(12)), bytes(range(12, 24))]),
        "palette_trns.png": png(4, 2, 3, 8, [b"\x00\x01\x02\x01", b"\x02\x01\x00\x00"],
                                plte=b"\xff\x00\x00\x00\xff\x00\x00\x00\xff", trns=b"\x80\xff"),
    }
    im = Image.new("RGB", (9, 7))
    im.putdata([((x * 29) % 256, (y * 37) % 256, (x * y) % 256) for y in range(7) for x in range(9)])
    buf = io.BytesIO()
    im.save(buf, "PNG")
    pngs["pil_plain.png"] = buf.getvalue()
    pngs["interlaced.png"] = adam7_png(im)
    for name, data in pngs.items():
        out("image_decode", name, data)
        out("image_metadata", name, data)

    exif = Image.Exif()
    exif_ifd = {0x9286: b"UNICODE\x00" + INFOTEXT.encode("utf-16-be")}
    exif[0x8769] = exif_ifd
    jpegs = {}
    for name, kwargs in {
        "baseline.jpg": {"quality": 80},
        "progressive.jpg": {"quality": 70, "progressive": True},
        "exif.jpg": {"quality": 75, "exif": exif},
        "comment.jpg": {"quality": 75, "comment": INFOTEXT.encode()},
    }.items():
        b = io.BytesIO()
        im.save(b, "JPEG", **kwargs)
        jpegs[name] = b.getvalue()
    b = io.BytesIO()
    im.convert("L").save(b, "JPEG", quality=60)
    jpegs["grey.jpg"] = b.getvalue()
    b = io.BytesIO()
    im.convert("CMYK").save(b, "JPEG", quality=60)
    jpegs["cmyk.jpg"] = b.getvalue()
    for name, data in jpegs.items():
        out("image_decode", name, data)
        out("image_metadata", name, data)
    for name, kwargs in {
        "lossy.webp": {"quality": 60},
        "lossless.webp": {"lossless": True},
        "exif.webp": {"quality": 60, "exif": exif.tobytes()},
    }.items():
        b = io.BytesIO()
        im.save(b, "WEBP", **kwargs)
        out("image_decode", name, b.getvalue())
        out("image_metadata", name, b.getvalue())
    b = io.BytesIO()
    Image.new("RGBA", (5, 4), (10, 200, 30, 128)).save(b, "WEBP", lossless=True)
    out("image_decode", "alpha.webp", b.getvalue())
    # Little-endian EXIF with an ASCII UserComment, alone (the EXIF reader is fed raw bytes).
    le = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1) + \
        struct.pack("<HHII", 0x8769, 4, 1, 26) + struct.pack("<I", 0) + \
        struct.pack("<H", 1) + struct.pack("<HHII", 0x9286, 7, 20, 44) + struct.pack("<I", 0) + \
        b"ASCII\x00\x00\x00Steps: 1, Seed: 2"
    out("image_metadata", "exif_le.bin", b"Exif\x00\x00" + le)


# ---------------------------------------------------------------------------- text

def text_seeds():
    infotexts = {
        "a1111.txt": INFOTEXT,
        "quoted.txt": 'a cat\nSteps: 20, Lora hashes: "add_detail: 7c6bad76eb54, more: 1", '
                      'Seed: 1, Size: 512x768, TI hashes: "x: y"',
        "forge.txt": "p\nSteps: 4, Sampler: Euler, CFG scale: 1, Distilled CFG Scale: 3.5, "
                     "Seed: 7, Size: 1024x1024, Model hash: abc, Denoising strength: 0.75, "
                     "Clip skip: 2, RNG: CPU, Eta: 0.5",
        "no_params.txt": "just a prompt\nover two lines",
        "bad_number.txt": "p\nSteps: x, Seed: 1, Size: 2x2",
        "escapes.txt": 'p\nSteps: 1, Seed: 2, Note: "a \\"b\\", c\\nd"',
    }
    for name, t in infotexts.items():
        out("infotext", name, t)
    prompts = {
        "emphasis.txt": "a (red:1.3) cube on a [wooden] table, ((masterpiece)), (x:0.5)",
        "break.txt": "first part BREAK second part BREAKfast BREAK",
        "escapes.txt": r"literal \(parens\) and \[brackets\] and \\ backslash \q",
        "lora.txt": "a portrait <lora:add_detail:0.8> <lora:style:1> (detailed:1.1)",
        "unbalanced.txt": "((a [b (c:1.5 d] e) f",
        "unicode.txt": "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600 BREAK \u00e9t\u00e9",
        "long_word.txt": "supercalifragilisticexpialidocious" * 4,
        "specials.txt": "<|startoftext|>a<|endoftext|> it's we'll 123 !!!",
    }
    for name, t in prompts.items():
        out("prompt", name, t)
    placements = {
        "simple.txt": "CUDA0\nCPU\nlayer\n8\n127.0.0.1:50052",
        "modules.txt": "all=CUDA0,diffusion=CUDA0&CUDA1,te=CPU\nte=disk,vae=cpu\n"
                       "diffusion=row,te=layer\nCUDA0=8,CUDA1=-1.5\nhost:1,10.0.0.2:50052",
        "defaults.txt": "all=default,vae=RPC0\nall=default\nall=row\nall=6\n",
        "bad.txt": "diffusion=CUDA0&default\ndiffusion=CUDA0&CUDA1\nsideways\n0\nhost",
        "case.txt": "Control_Net=cpu,TE=cuda0\nDIFFUSION=Disk\nROW\n-2\n[::1]:80",
        "replicas.txt": "all=CUDA0|CUDA1,vae=CPU,te=RPC0|Vulkan0\ndiffusion=cpu\nrow\n8\n",
    }
    for name, t in placements.items():
        out("placement", name, t)


# ---------------------------------------------------------------------------- server

def http(method, path, body=b"", headers=(), content_type="application/json"):
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1:7860"]
    if body:
        lines += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def multipart(parts, boundary="ggdiffBoundary7f3a"):
    body = b""
    for name, value, filename in parts:
        disp = f'Content-Disposition: form-data; name="{name}"'
        if filename:
            disp += f'; filename="{filename}"\r\nContent-Type: image/png'
        body += f"--{boundary}\r\n{disp}\r\n\r\n".encode()
        body += value if isinstance(value, bytes) else value.encode()
        body += b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def server_seeds():
    import base64
    tiny = png(8, 8, 2, 8, [bytes(v for x in range(8) for v in (x * 30, y * 30, 90))
                          for y in range(8)])
    # Transparent on the left half: the part OpenAI's edits repaint.
    mask = png(8, 8, 6, 8, [bytes(v for x in range(8) for v in (255, 255, 255, 0 if x < 4 else 255))
                          for _ in range(8)])
    b64 = base64.b64encode(tiny).decode()
    requests = {
        "txt2img.http": http("POST", "/sdapi/v1/txt2img", json.dumps({
            "prompt": "a (red:1.2) cube <lora:style:0.5>", "negative_prompt": "blurry",
            "steps": 4, "width": 64, "height": 64, "cfg_scale": 7, "seed": 42,
            "sampler_name": "Euler a", "scheduler": "karras", "batch_size": 1, "n_iter": 1,
            "override_settings": {"CLIP_stop_at_last_layers": 2}})),
        "img2img.http": http("POST", "/sdapi/v1/img2img", json.dumps({
            "prompt": "p", "init_images": ["data:image/png;base64," + b64], "mask": b64,
            "denoising_strength": 0.6, "mask_blur": 4, "inpainting_mask_invert": 1,
            "inpainting_fill": 1, "steps": 2, "width": 64, "height": 64})),
        "options.http": http("POST", "/sdapi/v1/options", json.dumps({
            "CLIP_stop_at_last_layers": 1, "samples_format": "jpg"})),
        "openai_generations.http": http("POST", "/v1/images/generations", json.dumps({
            "prompt": "a cat", "n": 1, "size": "64x64", "response_format": "b64_json",
            "output_format": "webp", "output_compression": 80, "quality": "low"})),
        "sdcpp_img_gen.http": http("POST", "/sdcpp/v1/img_gen", json.dumps({
            "prompt": "a dog", "width": 64, "height": 64, "seed": -1, "batch_count": 1,
            "sample_params": {"sample_method": "euler", "sample_steps": 3,
                              "guidance": {"txt_cfg": 5.0}},
            "lora": [{"path": "style", "multiplier": 0.7}],
            "output_format": "png"})),
        "get_samplers.http": http("GET", "/sdapi/v1/samplers"),
        "get_job.http": http("GET", "/sdcpp/v1/jobs/job-1/events"),
        "cors_preflight.http": http("OPTIONS", "/v1/images/generations", headers=(
            "Origin: http://example.com", "Access-Control-Request-Method: POST")),
        "bearer.http": http("GET", "/v1/models", headers=("Authorization: Bearer k",)),
        "chunked.http": b"POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"9\r\n{\"steps\":\r\n3\r\n 2}\r\n0\r\n\r\n",
        "bad_json.http": http("POST", "/sdapi/v1/txt2img", '{"prompt": [1, {"a": nul'),
    }
    body, ctype = multipart([("prompt", "paint it blue", None), ("n", "1", None),
                             ("size", "64x64", None), ("image", tiny, "in.png"),
                             ("mask", mask, "mask.png")])
    requests["openai_edits.http"] = http("POST", "/v1/images/edits", body, content_type=ctype)
    for name, data in requests.items():
        out("server", name, data)


def crash(target, name, data):
    d = os.path.join(HERE, "crashes", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def issue9_inputs():
    """The small reproducers of issue 9 (the large ones are built by tests/hardening)."""
    one = '"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'

    def st(header, data):
        h = header.encode()
        return struct.pack("<Q", len(h)) + h + data

    crash("safetensors", "issue9_empty_metadata_key.safetensors",
          st('{"__metadata__": {"": "x"}, ' + one + '}', b"abcd"))
    crash("safetensors", "issue9_nul_in_names.safetensors",
          st('{"a\\u0000x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
             '"a\\u0000y": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(8)))
    crash("safetensors", "issue9_nested_metadata.safetensors",
          st('{"__metadata__": {"k": ' + "[" * 2000 + "]" * 2000 + '}, ' + one + '}', b"abcd"))
    crash("safetensors", "issue9_zero_dim_huge_shape.safetensors",
          st('{"z": {"dtype": "F32", "shape": [281474976710656, 32768, 0], '
             '"data_offsets": [0, 0]}, "e": {"dtype": "F16", "shape": [0], '
             '"data_offsets": [0, 0]}}', b""))
    crash("gguf", "issue9_shape_table_overflow.gguf", gguf(
        [("w", "F32", [4])],
        [("ggdiff.tensor_shapes", "arr_str", ["999999999999999,999999999999999"])]))
    crash("gguf", "issue9_empty_key.gguf", gguf([("w", "F32", [1])], [("", "str", "x")]))
    crash("image_metadata", "issue9_itxt_chunk_type.png",
          png(1, 1, 2, 8, [b"\x00\x00\x00"], png_chunk(b"iTXt", b"parameters\x00\x01")))
    crash("infotext", "issue9_word_run.txt", "a prompt\nSteps: 1, " + "a" * 8192)


def main():
    issue9_inputs()
    safetensors_seeds()
    gguf_seeds()
    image_seeds()
    text_seeds()
    server_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
