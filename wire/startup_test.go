package wire

import (
	"fmt"
	"testing"
)

// TestParseOptions: a startup packet's options as PostgreSQL 15 reads them
// (its answers to the same PGOPTIONS: TimeZone Asia/Tokyo, application_name
// 'x y', work_mem 8MB; -x and a -c without a value refused with 42601).
func TestParseOptions(t *testing.T) {
	got, err := parseOptions(`-c TimeZone=Asia/Tokyo  --application-name=x\ y -cwork_mem=8MB -c search_path=a=b`)
	want := "[{TimeZone Asia/Tokyo} {application_name x y} {work_mem 8MB} {search_path a=b}]"
	if err != nil || fmt.Sprint(got) != want {
		t.Errorf("parseOptions: %v %v, want %s", got, err, want)
	}
	for opts, msg := range map[string]string{
		"-x":         "invalid command-line argument for server process: -x",
		"-c":         "invalid command-line argument for server process: -c",
		"--TimeZone": "--TimeZone requires a value",
		"-c nope":    "-c nope requires a value",
	} {
		_, err := parseOptions(opts)
		if err == nil || err.Error() != msg || codeOf(err) != "42601" {
			t.Errorf("parseOptions(%q): %v, want 42601 %q", opts, err, msg)
		}
	}
	settings, err := startupSettings(map[string]string{"user": "u", "database": "d", "options": "-c TimeZone=UTC",
		"TimeZone": "Europe/Paris", "application_name": "a", "_pq_.x": "1", "replication": "false"})
	if want := "[{TimeZone UTC} {TimeZone Europe/Paris} {application_name a}]"; err != nil || fmt.Sprint(settings) != want {
		t.Errorf("startupSettings: %v %v, want %s", settings, err, want)
	}
}
