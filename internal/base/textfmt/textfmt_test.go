package textfmt

import "testing"

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 40000: "40,000", 1234567: "1,234,567",
		-1: "-1", -999: "-999", -1000: "-1,000", -123456: "-123,456"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
