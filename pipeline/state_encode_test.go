package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/pricing"
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
			Usage: &usageState{Tokens: 10, Counted: 9, Ratio: 1.1, N: 2}, LastAt: at, ForwardedGrowth: 1.5},
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
		st.observe(pricing.Usage{Uncached: 500}, 400, 1)
		want, _ = json.Marshal(st)
		got, again, err := encodeState(st, results)
		if err != nil || !bytes.Equal(got, want) || !bytes.Equal(again.data, results.data) {
			t.Fatalf("encodeState with the results given = %s, %v\nwant %s", got, err, want)
		}
	}
}

// TestEncodeResultsReusesEqualEntries: the Results encoded with an earlier
// state's JSON (entries added, removed, changed, kept, a nil one) are
// json.Marshal's byte for byte, and an entry kept as it was is copied from
// that JSON, not encoded again.
func TestEncodeResultsReusesEqualEntries(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	prev := newState()
	for _, k := range []string{"a\x00d1", "b\x00d2", "c\x00d3", "e\x00d5"} {
		prev.Results[k] = &resultState{FirstSeen: at, Artifact: "tool_result_" + k[:1], Content: "<ref " + k[:1] + ">"}
	}
	prevJSON, err := encodeResults(prev.Results, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(prev.Results); !bytes.Equal(prevJSON.data, want) {
		t.Fatalf("encodeResults = %s\nwant %s", prevJSON.data, want)
	}
	for i, k := range prevJSON.keys {
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(prev.Results[k])
		if got := prevJSON.data[prevJSON.spans[i].start:prevJSON.spans[i].end]; string(got) != string(kb)+":"+string(vb) {
			t.Fatalf("span of %q holds %s", k, got)
		}
	}

	st := prev.clone()
	delete(st.Results, "a\x00d1")                                                                                                    // removed
	st.Results["b\x00d2"].Action = actionOffloaded                                                                                   // changed
	st.Results["d\x00d4"] = &resultState{FirstSeen: at}                                                                              // added
	st.Results["0\x00d0"] = nil                                                                                                      // nil
	st.Results["e\x00d5"] = &resultState{FirstSeen: at.In(time.FixedZone("x", 3600)), Artifact: "tool_result_e", Content: "<ref e>"} // the same instant, written otherwise
	// A marker in the earlier JSON shows which entries were copied.
	mark := bytes.Clone(prevJSON.data)
	copy(mark[bytes.Index(mark, []byte("ref c")):], "REF c")
	got, err := encodeResults(st.Results, prev, &resultsJSON{data: mark, keys: prevJSON.keys, spans: prevJSON.spans})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(st.Results)
	want = bytes.Replace(want, []byte("ref c"), []byte("REF c"), 1)
	if !bytes.Equal(got.data, want) {
		t.Fatalf("encodeResults after changes = %s\nwant (c copied) %s", got.data, want)
	}
	if bytes.Count(got.data, []byte("REF")) != 1 {
		t.Fatalf("the kept entry was not copied from the earlier JSON: %s", got.data)
	}
}

// A session's results come and go from save to save: each save's Results,
// encoded with the last save's JSON (its keys taken in their order, the
// new ones sorted among them), are json.Marshal's byte for byte.
func TestEncodeResultsKeysInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prev := newState()
	prevJSON, err := encodeResults(prev.Results, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 300 {
		st := prev.clone()
		for range r.IntN(6) {
			k := fmt.Sprintf("toolu_%02d\x00d", r.IntN(60))
			if r.IntN(3) == 0 {
				delete(st.Results, k)
			} else {
				st.Results[k] = &resultState{FirstSeen: at.Add(time.Duration(round) * time.Second)}
			}
		}
		got, err := encodeResults(st.Results, prev, prevJSON)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(st.Results); !bytes.Equal(got.data, want) {
			t.Fatalf("round %d: encodeResults = %s\nwant %s", round, got.data, want)
		}
		prev, prevJSON = st, got
	}
}

// TestAppendResultIsMarshal: an entry written by hand is json.Marshal's
// byte for byte, for every field set or not, strings that need escaping
// (quotes, controls, HTML, U+2028, invalid UTF-8, DEL), times in zones,
// with and without nanoseconds, and times json.Marshal refuses (the same
// error).
func TestAppendResultIsMarshal(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("x", -7*3600-30*60), time.FixedZone("s", 45), time.FixedZone("far", 25*3600)}
	strs := []string{"", "plain", `q"uote\back`, "line\nbreak\ttab\x01", "nul\x00 \b\f\r\x1f", "nul\x00\r\x1f", "<b>&amp;</b>", "a<b", "a>b", "a&b", "\u2028\u2029", "bad \xff utf8", "del \x7f", "é ünïcode 中文"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return strs[rng.IntN(len(strs))] }
	when := func() time.Time {
		switch rng.IntN(6) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // refused
		}
		return time.Date(2026, 11, 29, 15, 4, 5, rng.IntN(3)*123456789, zones[rng.IntN(len(zones))])
	}
	for i := range 2000 {
		k, r := pick()+fmt.Sprint(i), &resultState{FirstSeen: when(), Artifact: pick(), Action: pick(), At: when(), Content: pick(),
			Chars: rng.IntN(3) - 1, Behind: rng.IntN(2) == 0, Swept: rng.IntN(2) == 0}
		kb, _ := json.Marshal(k)
		vb, werr := json.Marshal(r)
		got, err := appendResult([]byte("x"), k, r)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%+v: error %v, json.Marshal's %v", r, err, werr)
		}
		if want := "x" + string(kb) + ":" + string(vb); err == nil && string(got) != want {
			t.Fatalf("%+v:\n got %s\nwant %s", r, got, want)
		}
	}
	if got, err := appendResult(nil, "k", nil); err != nil || string(got) != `"k":null` {
		t.Fatalf("nil entry: %s, %v", got, err)
	}
}

// A state saved after an earlier one encodes its results in place, from
// the earlier JSON where entries are unchanged: json.Marshal's bytes, the
// results' JSON and spans as encodeResults gives them, and one copy of
// the state allocated besides its keys and spans (the results were
// encoded apart, then copied in).
func TestEncodeStateFromIsMarshalInOneCopy(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	prev := newState()
	for i := range 5000 {
		prev.Results[fmt.Sprintf("toolu_%07d\x00%024x", i, i)] = &resultState{FirstSeen: at}
	}
	_, prevJSON, err := encodeState(prev, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := prev.clone()
	st.Requests++
	st.Results["toolu_new\x00x"] = &resultState{FirstSeen: at, Action: actionPruned, Content: "[cleared]"}
	want, _ := json.Marshal(st)
	wantRes, err := encodeResults(st.Results, prev, prevJSON)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var res *resultsJSON
	n := memtest.AllocatedBy(func() { got, res, err = encodeStateFrom(st, nil, prev, prevJSON) })
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodeStateFrom = %.200s, %v\nwant %.200s", got, err, want)
	}
	if !bytes.Equal(res.data, wantRes.data) || !slices.Equal(res.keys, wantRes.keys) || !slices.Equal(res.spans, wantRes.spans) {
		t.Fatal("the results' JSON in the state is not encodeResults'")
	}
	// The state, and its keys and spans (16 bytes each, sorted keys made twice).
	if limit := uint64(len(got) + 64*len(st.Results)); n > limit {
		t.Errorf("encoding a %d-byte state of %d results allocated %d bytes", len(got), len(st.Results), n)
	}
}
