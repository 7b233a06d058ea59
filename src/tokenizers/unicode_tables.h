// Unicode character-class tables for the tokenizers (generated into unicode_tables.cpp).
#pragma once

#include <cstddef>

namespace ggdiff::unicode_tables {

// An inclusive range of code points.
struct CodeRange {
    char32_t first;
    char32_t last;
};

// Code points first, first + stride, ..., last lowercase to cp + delta.
struct LowerRun {
    char32_t first;
    char32_t last;
    int stride;
    int delta;
};

// Sorted, non-overlapping. Letters are \p{L}, numbers \p{N}, spaces \s of Python's `regex`.
extern const CodeRange kLetters[];
extern const size_t kLetters_count;
extern const CodeRange kNumbers[];
extern const size_t kNumbers_count;
extern const CodeRange kSpaces[];
extern const size_t kSpaces_count;
// \p{Ll}, [\p{Lu}\p{Lt}] and \p{M} (Mistral's Tekken pre-tokenizer).
extern const CodeRange kLowercase[];
extern const size_t kLowercase_count;
extern const CodeRange kUpperTitle[];
extern const size_t kUpperTitle_count;
extern const CodeRange kMarks[];
extern const size_t kMarks_count;
// Simple (one to one) lowercase mappings of Python's str.lower(), sorted by first.
extern const LowerRun kLower[];
extern const size_t kLower_count;

}  // namespace ggdiff::unicode_tables
