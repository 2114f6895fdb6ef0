package pipeline

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestEncodeStateIsMarshal: the state's encoding, with its results' JSON
// encoded anew or given, is json.Marshal's byte for byte, whatever the
// results hold (escapes, HTML, the member's own name in a value).
func TestEncodeStateIsMarshal(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, st := range []*state{
		newState(),
		{Schema: stateSchema},
		{Schema: stateSchema, Requests: 3, Counted: 12, Results: map[string]*resultState{
			"call_1\x00abc":         {FirstSeen: at, Artifact: "tool_result_call_1", Action: actionPruned, At: at, Content: `"results":null <b>&</b> ` + "\u2028", Chars: 10},
			"call_0\x00\"results\"": {FirstSeen: at},
		}, Compaction: &compactionState{N: 4, Digest: "d", Marks: []string{"a"}, Summary: `"results":null`, At: at},
			Usage: &usageState{Tokens: 10, Counted: 9, Ratio: 1.1, N: 2}, LastAt: at, Growth: 1.5},
	} {
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, results, err := encodeState(st, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeState = %s, %v\nwant %s", got, err, want)
		}
		// Another call that leaves the results alone gives their JSON.
		st.observe(Usage{InputTokens: 500, Counted: 400}, 1)
		want, _ = json.Marshal(st)
		got, again, err := encodeState(st, results)
		if err != nil || !bytes.Equal(got, want) || !bytes.Equal(again, results) {
			t.Fatalf("encodeState with the results given = %s, %v\nwant %s", got, err, want)
		}
	}
}
