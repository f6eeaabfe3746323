package wire

import "testing"

// TestNumericBinary checks numeric_send's encoding against numeric_recv's
// decoding, on values whose digit groups straddle the point.
func TestNumericBinary(t *testing.T) {
	for _, tc := range []struct {
		text  string
		scale int
	}{
		{"0.00", 2}, {"1.50", 2}, {"-12345.6789", 4}, {"10000", 0}, {"0.0001", 4}, {"-0.5", 1}, {"123456789012.30", 2},
	} {
		enc := appendNumeric(nil, []byte(tc.text), tc.scale)
		got, err := numericText(enc)
		if err != nil || got != tc.text {
			t.Errorf("%s: round trip gives %q, %v (encoded %x)", tc.text, got, err, enc)
		}
	}
}
