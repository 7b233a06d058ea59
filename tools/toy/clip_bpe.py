"""CLIP's byte-level BPE tokenizer (the same rules as ggdiff's src/tokenizers/clip_tokenizer)
and the SD1 window layout (BOS + tokens + EOS, padded with EOS to 77), for training the toy
model's text encoder on exactly the ids ggdiff will feed it.

Captions here are plain lowercase ASCII, so the pre-tokenizer is a simple regex without the
Unicode letter classes of the full CLIP rules.
"""
import re

N_MERGES = 49152 - 256 - 2
BOS, EOS = 49406, 49407
WINDOW = 77


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class ClipBpe:
    def __init__(self, merges_path):
        lines = open(merges_path, encoding="utf-8").read().split("\n")[1:N_MERGES + 1]
        merges = [tuple(l.split()) for l in lines]
        self.byte_encoder = _bytes_to_unicode()
        vocab = list(self.byte_encoder.values())
        vocab = vocab + [v + "</w>" for v in vocab]
        vocab += ["".join(m) for m in merges]
        vocab += ["<|startoftext|>", "<|endoftext|>"]
        self.encoder = {t: i for i, t in enumerate(vocab)}
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.cache = {}
        self.pat = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[a-z]+|[0-9]|[^\sa-z0-9]+")

    def _bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token[:-1]) + [token[-1] + "</w>"]
        while len(word) > 1:
            pairs = [(self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in
                     enumerate(zip(word, word[1:]))]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            first, second = word[i], word[i + 1]
            merged, j = [], 0
            while j < len(word):
                if j < len(word) - 1 and word[j] == first and word[j + 1] == second:
                    merged.append(first + second)
                    j += 2
                else:
                    merged.append(word[j])
                    j += 1
            word = merged
        self.cache[token] = word
        return word

    def encode(self, text):
        text = " ".join(text.split()).lower()
        ids = []
        for piece in self.pat.findall(text):
            piece = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids += [self.encoder[t] for t in self._bpe(piece)]
        return ids

    def window(self, text):
        """One 77-token SD1 window: BOS, up to 75 tokens, EOS, EOS padding."""
        ids = [BOS] + self.encode(text)[:WINDOW - 2] + [EOS]
        return ids + [EOS] * (WINDOW - len(ids))
