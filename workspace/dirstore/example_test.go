package dirstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// Artifacts are plain files: the content byte for byte beside a JSON
// description, one directory per namespace.
func Example() {
	root, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(root)
	s, err := dirstore.Open(root, dirstore.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	_, err = s.Put(context.Background(), "default", workspace.Artifact{
		Info:    workspace.Info{ID: "tool_result_toolu_01", Metadata: workspace.Metadata{"context_type": "tool_result"}},
		Content: "total 0\n",
	})
	if err != nil {
		panic(err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "default"))
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	path, _ := s.(workspace.Pather).Path("default", "tool_result_toolu_01") // a directory store keeps files
	content, _ := os.ReadFile(path)
	fmt.Printf("%q\n", content)
	// Output:
	// .lock
	// tool_result_toolu_01.meta.json
	// tool_result_toolu_01.txt
	// "total 0\n"
}
