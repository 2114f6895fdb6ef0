// Package tokens counts and encodes text into the tokens of OpenAI's BPE
// encodings o200k_base (GPT-4o, GPT-4.1, GPT-5, o1, o3, o4-mini) and
// cl100k_base (GPT-4, GPT-3.5-turbo), exactly as OpenAI's tiktoken does,
// offline and fast.
//
// # Quick start
//
//	enc := tokens.O200kBase()
//	n := enc.Count(text)    // number of tokens, no allocation
//	ids := enc.Encode(text) // token ids, tiktoken's encode_ordinary(text)
//
// Code that only needs a number should depend on the one-method [Counter]
// interface, which *[Encoding] implements. [Get] selects an encoding by name
// and returns an error wrapping [ErrUnknownEncoding] for a name it does not
// know.
//
// # Exactness
//
// Count(text) equals len(tiktoken.encode_ordinary(text)) and Encode equals it
// id for id, for both encodings and every input: special-token text such as
// "<|endoftext|>" is ordinary text. The tests check this against reference
// data made with tiktoken itself (the npm build of OpenAI's Rust code) for
// thousands of random and adversarial strings, a corpus of prose, code, JSON,
// CJK text and emoji, and a 1 MiB mixed text: see testdata/ and
// bench/gen-reference.sh.
//
// tiktoken splits text into pieces with a regular expression before the
// byte pair merges. This package replaces each pattern with a hand-written
// splitter that reproduces the regex engine's backtracking: white-space runs
// that give their last character to the next word, newline runs, numbers in
// groups of three, case-insensitive contractions (the regex engine folds
// U+017F ſ to s), and o200k's rules for upper- and lowercase letters and
// combining marks.
//
// Characters are classified with a table made from tiktoken's regex engine
// (Rust regex-syntax 0.8.5, Unicode 16.0.0), not with Go's unicode package,
// which Go 1.26 ships at Unicode 15.0.0. The versions disagree on about 5,000
// characters added in Unicode 15.1 and 16.0: U+2EBF0 (CJK Unified Ideograph,
// Extension I), for example, is a letter to tiktoken, so "a\U0002EBF0b" is
// one piece, while unicode.IsLetter(0x2EBF0) is false in Go 1.26. Characters
// added in Unicode 17.0 are unassigned to tiktoken and to this package.
//
// Text that is not valid UTF-8 is counted as if each byte that is not part of
// a valid UTF-8 sequence were U+FFFD, the replacement character: the string
// that ranging over text or []rune(text) yields, and what encoding/json sends
// when it marshals text. (tiktoken itself takes text, not bytes. Python's
// errors="replace" and JavaScript's TextDecoder replace each maximal invalid
// subsequence with one U+FFFD instead: one for a truncated four-byte
// sequence, where Go has one per byte.)
//
// # Vocabularies
//
// The vocabularies are embedded in the binary in a compact form (data/*.bin,
// 1.6 MB for o200k_base and 0.7 MB for cl100k_base) and never downloaded.
// They are OpenAI's o200k_base.tiktoken and cl100k_base.tiktoken files
// (SHA-256 446a9538…1a2d and 223921b7…b2a7, as pinned by tiktoken), taken
// from the Go module github.com/pkoukk/tiktoken-go-loader v0.0.2 (MIT
// License), which embeds them unchanged, and converted by internal/gen
// ("go generate"). That module is used only at generation time and is not a
// dependency. See data/README.md.
//
// # Performance
//
// An encoding is built from the embedded data on first use, once per
// process (guarded by a sync.Once; the built encoding is immutable). That
// takes about 10 ms for o200k_base and 4 ms for cl100k_base on a small
// virtual machine, mostly hashing the vocabulary into a table and the page
// faults of its 4 MiB (2 MiB). Counting runs at
// tens of megabytes per second on one core, several times the fastest
// JavaScript tokenizers: see BENCHMARKS.md in the repository root and
// bench/peers.sh. Count allocates nothing for valid UTF-8; pieces longer
// than a few dozen bytes borrow scratch memory from a per-encoding
// sync.Pool. Byte pair merging is O(n log n) in the piece length, so even a
// megabyte-long run of one character is counted in milliseconds.
//
// An *Encoding is safe for concurrent use.
package tokens

//go:generate go run ./internal/gen
