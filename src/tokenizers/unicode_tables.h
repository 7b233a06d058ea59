// Unicode character-class tables for the CLIP tokenizer (generated into unicode_tables.cpp).
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
// Simple (one to one) lowercase mappings of Python's str.lower(), sorted by first.
extern const LowerRun kLower[];
extern const size_t kLower_count;

}  // namespace ggdiff::unicode_tables
