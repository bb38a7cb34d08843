package scheduler

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func TestParseConfigErrorsNameJobAndField(t *testing.T) {
	cases := []struct {
		name, doc, job, field, text string
	}{
		{"unknown job", `{"jobs": {"eodd": {}}}`, "eodd", "name",
			`jobs.json: job "eodd": field "name": unknown job; known jobs: bulk-window, case-sla-escalation, deferred-window, dns-intraday-cutoff, dns-kick, dns-settle, eod, finality-audit, idempotency-ttl-cleanup, jobs-ledger-prune, outbox-drain, overnight-receive, overnight-send, timeout-sweep`},
		{"unknown job field", `{"jobs": {"eod": {"schedul": "x"}}}`, "eod", "schedul",
			`jobs.json:1:19: job "eod": field "schedul": unknown field: did you mean "schedule"? (known: catch_up, enabled, instance, schedule, timeout)`},
		{"schedule without JST", `{"jobs": {"eod": {"schedule": "30 23 * * *"}}}`, "eod", "schedule",
			`jobs.json: job "eod": field "schedule": "30 23 * * *" must start with "CRON_TZ=Asia/Tokyo " (business time is JST)`},
		{"bad cron spec", `{"jobs": {"dns-kick": {"schedule": "CRON_TZ=Asia/Tokyo 61 * * * *"}}}`, "dns-kick", "schedule",
			`jobs.json: job "dns-kick": field "schedule": "CRON_TZ=Asia/Tokyo 61 * * * *": end of range (61) above maximum (59): 61`},
		{"schedule not a string", `{"jobs": {"eod": {"schedule": 5}}}`, "eod", "schedule",
			`jobs.json:1:31: job "eod": field "schedule": want a string, got the number 5`},
		{"bad instance", `{"jobs": {"eod": {"instance": "weekly"}}}`, "eod", "instance",
			`jobs.json: job "eod": field "instance": "weekly" is not daily or repeating`},
		{"catch-up on repeating", `{"jobs": {"timeout-sweep": {"catch_up": true}}}`, "timeout-sweep", "catch_up",
			`jobs.json: job "timeout-sweep": field "catch_up": only daily jobs can be caught up`},
		{"bad timeout", `{"jobs": {"eod": {"timeout": "soon"}}}`, "eod", "timeout",
			`jobs.json: job "eod": field "timeout": "soon" is not a duration like 90s or 2m`},
		{"negative lease", `{"lease_ttl": "-1m"}`, "", "lease_ttl",
			`jobs.json: field "lease_ttl": "-1m" must be positive`},
		{"renew not shorter", `{"lease_ttl": "1m", "renew_every": "1m"}`, "", "renew_every",
			`jobs.json: field "renew_every": 1m0s must be shorter than lease_ttl 1m0s`},
		{"max days", `{"catch_up_max_days": 400}`, "", "catch_up_max_days",
			`jobs.json: field "catch_up_max_days": 400 is outside 0..366`},
		{"unknown top field", `{"lease": "1m"}`, "", "lease",
			`jobs.json:1:2: field "lease": unknown field (known: catch_up_max_days, jobs, lease_ttl, renew_every)`},
		{"syntax", `{"jobs": {"eod": {"enabled": tru}}}`, "eod", "enabled",
			`jobs.json:1:33: job "eod": field "enabled": not valid JSON: invalid character '}' in literal true (expecting 'e')`},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.doc), "jobs.json")
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want *ConfigError", c.name, err)
			continue
		}
		if ce.Job != c.job || ce.Field != c.field || err.Error() != c.text {
			t.Errorf("%s:\n got job=%q field=%q %s\nwant job=%q field=%q %s", c.name, ce.Job, ce.Field, err, c.job, c.field, c.text)
		}
		if domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("%s: code %q", c.name, domainerr.Code(err))
		}
	}
}

func TestConfigOverridesDefaultsFieldByField(t *testing.T) {
	c, err := ParseConfig([]byte(`{"lease_ttl": "90s", "catch_up_max_days": 3,
		"jobs": {"eod": {"schedule": "CRON_TZ=Asia/Tokyo 0 22 * * 1-5", "timeout": "0"}, "outbox-drain": {"enabled": false}}}`), "jobs.json")
	if err != nil {
		t.Fatal(err)
	}
	eod := c.Jobs["eod"]
	if c.LeaseTTL != 90*time.Second || c.RenewEvery != 30*time.Second || c.CatchUpMaxDays != 3 ||
		eod.Schedule != "CRON_TZ=Asia/Tokyo 0 22 * * 1-5" || eod.Timeout != 0 || !eod.CatchUp || eod.Instance != Daily ||
		c.Jobs["outbox-drain"].Enabled || !c.Jobs["timeout-sweep"].Enabled {
		t.Fatalf("config = %+v eod = %+v", c, eod)
	}
	// Friday 2026-12-04 22:00 JST is next after Thursday 23:00; Saturday is skipped
	from := time.Date(2026, 12, 3, 23, 0, 0, 0, clock.JST)
	if got := eod.Next(from); !got.Equal(time.Date(2026, 12, 4, 22, 0, 0, 0, clock.JST)) {
		t.Fatalf("next = %v", got)
	}
	if got := eod.Next(time.Date(2026, 12, 4, 22, 0, 0, 0, clock.JST)); !got.Equal(time.Date(2026, 12, 7, 22, 0, 0, 0, clock.JST)) {
		t.Fatalf("next after Friday = %v", got)
	}
}

func TestLoadConfigDefaultsWhenAbsent(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadConfig(filepath.Join(dir, ConfigFileName))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"timeout-sweep": "CRON_TZ=Asia/Tokyo * * * * *", "eod": "CRON_TZ=Asia/Tokyo 30 23 * * *",
		"dns-kick": "CRON_TZ=Asia/Tokyo 0 16 * * *", "bulk-window": "CRON_TZ=Asia/Tokyo 0 9,11,13,15 * * *",
	}
	for j, s := range want {
		if c.Jobs[j].Schedule != s {
			t.Errorf("%s schedule = %q, want %q", j, c.Jobs[j].Schedule, s)
		}
	}
	if len(c.Jobs) != 14 || c.LeaseTTL != 2*time.Minute || c.CatchUpMaxDays != 7 {
		t.Fatalf("defaults = %d jobs %+v", len(c.Jobs), c)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(`{"jobs": {"eod": {"enabled": "yes"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(filepath.Join(dir, ConfigFileName))
	if err == nil || err.Error() != `jobs.json:1:30: job "eod": field "enabled": want true or false, got the string "yes"` {
		t.Fatalf("bad file: %v", err)
	}
}

// jobs.json is decoded through strictjson: a key in another case (which
// encoding/json would quietly match), a repeated key (where it would keep
// the last) and invalid UTF-8 are refused like an unknown key, each naming
// the line:column, the job and the field.
func TestParseConfigStrictThroughStrictjson(t *testing.T) {
	cases := []struct{ name, doc, job, field, text string }{
		{"key in another case", "{\n  \"jobs\": {\"eod\": {\"Enabled\": false}}\n}", "eod", "Enabled",
			`jobs.json:2:20: job "eod": field "Enabled": unknown field (names are case-sensitive): did you mean "enabled"? (known: catch_up, enabled, instance, schedule, timeout)`},
		{"top-level key in another case", `{"Lease_TTL": "1m"}`, "", "Lease_TTL",
			`jobs.json:1:2: field "Lease_TTL": unknown field (names are case-sensitive): did you mean "lease_ttl"? (known: catch_up_max_days, jobs, lease_ttl, renew_every)`},
		{"repeated key", `{"lease_ttl": "1m", "lease_ttl": "3m"}`, "", "lease_ttl",
			`jobs.json:1:21: field "lease_ttl": repeated key`},
		{"repeated job", `{"jobs": {"eod": {}, "eod": {"enabled": false}}}`, "eod", "",
			`jobs.json:1:22: job "eod": repeated key`},
		{"invalid UTF-8", "{\"jobs\": {\"eod\": {\"schedule\": \"\xff\"}}}", "", "",
			`jobs.json:1:32: not valid UTF-8`},
		{"days out of range", `{"catch_up_max_days": 99999999999999999999}`, "", "catch_up_max_days",
			`jobs.json:1:23: field "catch_up_max_days": want an integer from -9223372036854775808 to 9223372036854775807, got the number 99999999999999999999`},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.doc), "jobs.json")
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want *ConfigError", c.name, err)
			continue
		}
		if ce.Job != c.job || ce.Field != c.field || err.Error() != c.text || domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("%s:\n got job=%q field=%q %s\nwant job=%q field=%q %s", c.name, ce.Job, ce.Field, err, c.job, c.field, c.text)
		}
	}
}
