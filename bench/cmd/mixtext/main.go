// Command mixtext writes the deterministic benchmark text of package
// bench/mixtext to standard output.
//
//	go run ./bench/cmd/mixtext [-size 1048576] > mixed.txt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentctx/agentctx/bench/mixtext"
)

func main() {
	size := flag.Int("size", mixtext.DefaultSize, "size in bytes")
	flag.Parse()
	if _, err := os.Stdout.WriteString(mixtext.Build(*size)); err != nil {
		fmt.Fprintln(os.Stderr, "mixtext:", err)
		os.Exit(1)
	}
}
