package pgstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/pgstore"
)

// A fleet shares one database: every process opens it with the same URL,
// and the schema is created or upgraded by the first.
func Example() {
	ctx := context.Background()
	store, err := pgstore.Open(ctx, os.Getenv("AGENTCTX_STORE"), pgstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer store.Close()
	ws := workspace.New(store, workspace.Options{SessionID: "s1"})
	text, err := ws.GrepSession(ctx, "ERROR", workspace.SessionGrepOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(text)
}
