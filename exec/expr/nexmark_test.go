package expr

import (
	"testing"
	"time"
)

// TestJavaDateFormat: Flink's DATE_FORMAT patterns, as Java's
// SimpleDateFormat prints them (worked by hand).
func TestJavaDateFormat(t *testing.T) {
	at := time.Date(2015, 7, 5, 14, 3, 9, 42e6, time.UTC)
	for pattern, want := range map[string]string{
		"yyyy-MM-dd":              "2015-07-05",
		"HH:mm":                   "14:03",
		"yy/M/d h:m:s a":          "15/7/5 2:3:9 PM",
		"yyyy-MM-dd HH:mm:ss.SSS": "2015-07-05 14:03:09.042",
		"'day' d, 'o''clock' H":   "day 5, o'clock 14",
	} {
		if got := javaDateFormat(at, pattern); got != want {
			t.Errorf("%q: %q, want %q", pattern, got, want)
		}
	}
}
