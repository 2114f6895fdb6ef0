package tokens_test

import (
	"errors"
	"fmt"

	"github.com/agentctx/agentctx/tokens"
)

func Example() {
	enc := tokens.O200kBase() // GPT-4o, GPT-4.1, GPT-5, o-series
	fmt.Println(enc.Count("Hello, world! I'm counting tokens."))
	fmt.Println(enc.Encode("hello world"))
	// Output:
	// 8
	// [24912 2375]
}

func ExampleGet() {
	enc, err := tokens.Get("cl100k_base")
	if err != nil {
		panic(err)
	}
	fmt.Println(enc.Name(), enc.Count("hello world"))

	_, err = tokens.Get("p50k_base")
	fmt.Println(errors.Is(err, tokens.ErrUnknownEncoding))
	// Output:
	// cl100k_base 2
	// true
}

func ExampleCounter() {
	// Code that budgets tokens can depend on the one-method interface.
	var c tokens.Counter = tokens.O200kBase()
	budget := 8
	for _, msg := range []string{"short", "this message is longer than the eight-token budget allows"} {
		fmt.Println(c.Count(msg) <= budget)
	}
	// Output:
	// true
	// false
}

func ExampleEncoding_Count_specialTokens() {
	// Special-token text is ordinary text, as in tiktoken's encode_ordinary.
	fmt.Println(tokens.O200kBase().Count("<|endoftext|>"))
	// Output: 7
}
