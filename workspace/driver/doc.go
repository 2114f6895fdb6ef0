// Package driver is for the authors of workspace.Store backends: the types
// a Store takes and returns (package workspace names the same types), its
// errors, and the helpers that make every backend behave alike.
//
// A backend's methods start with Check (ctx, namespace and id, wrapped in
// an *Error naming the operation), store what Measure returns (so sizes and
// SHA-256 are computed the same way everywhere) after ValidateArtifact,
// and answer Query in SortInfos order through Page. A backend that reads
// lines or searches itself (workspace.LineReader, workspace.Searcher)
// returns what LinesOf and a Grepper (or GrepInfos, over a listing of its
// own) return for the same content. The conformance suite
// workspace/storetest checks all of it.
//
// Programs that use a store need none of this: they hold a
// workspace.Store, and read lines and search with workspace.Lines and
// workspace.Grep.
package driver
