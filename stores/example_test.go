package stores_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/stores"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

// A SQLite workspace given without a session store keeps its session
// state in the same file: a second process opening the file finds it.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stores")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "workspace.db")

	for process := 1; process <= 2; process++ {
		ws, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
		if err != nil {
			panic(err)
		}
		st, err := stores.Open(ctx, stores.Spec{Workspace: ws})
		if err != nil {
			panic(err)
		}
		data, version, err := st.Sessions.Load(ctx, "default", "s1")
		fmt.Printf("process %d: %q version %d (%v)\n", process, data, version, err)
		if process == 1 {
			st.Sessions.Save(ctx, "default", "s1", []byte("decisions"), 0)
		}
		st.Close() // the session store; ws is the caller's
		ws.Close()
	}
	// Output:
	// process 1: "" version 0 (session: load "s1" in namespace "default": session not found)
	// process 2: "decisions" version 1 (<nil>)
}
