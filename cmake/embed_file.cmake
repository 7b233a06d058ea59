# Writes a C++ source defining the bytes of a file as an array (cmake -P script):
#   cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -P embed_file.cmake
# defines `extern const unsigned char NAME[]` and `extern const unsigned long NAME_size`
# in namespace ggdiff::embedded.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
# 16 bytes per line keeps the file readable for compilers and editors.
string(REGEX REPLACE "(................................)" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n"
     "namespace ggdiff::embedded {\n"
     "extern const unsigned char ${SYMBOL}[];\n"
     "extern const unsigned long ${SYMBOL}_size;\n"
     "const unsigned char ${SYMBOL}[] = {\n${bytes}\n};\n"
     "const unsigned long ${SYMBOL}_size = ${size};\n"
     "}  // namespace ggdiff::embedded\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
