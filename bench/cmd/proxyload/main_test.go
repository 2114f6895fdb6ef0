package main

import "testing"

// TestSmoke runs the load script small: two sessions of 60 KB, three
// requests each, through a freshly built agentctx proxy.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentctx")
	}
	rep, err := run(2, 3, 60_000, 2, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Warm != 4 || rep.ProxyP50MS <= 0 || rep.OutsideP50MS <= 0 || rep.BytesIn == 0 || rep.BytesOut == 0 {
		t.Fatalf("report %+v", rep)
	}
}
