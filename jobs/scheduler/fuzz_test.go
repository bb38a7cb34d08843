package scheduler

import (
	"errors"
	"testing"
)

// ParseConfig never panics, and every failure is a *ConfigError.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"lease_ttl": "90s", "jobs": {"eod": {"schedule": "CRON_TZ=Asia/Tokyo 0 22 * * 1-5", "timeout": "0"}}}`))
	f.Add([]byte(`{"jobs": {"timeout-sweep": {"catch_up": true}}}`))
	f.Add([]byte(`{"jobs": {"eod": {"schedule": "CRON_TZ=Asia/Tokyo @every 1h"}}}`))
	f.Add([]byte(`{"catch_up_max_days": -1}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "jobs.json")
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		if c.RenewEvery >= c.LeaseTTL || len(c.Jobs) != len(defaultJobs) {
			t.Fatalf("accepted an inconsistent config: %+v", c)
		}
		for name, jc := range c.Jobs {
			if jc.parsed == nil || (jc.CatchUp && jc.Instance != Daily) {
				t.Fatalf("job %s accepted inconsistent: %+v", name, jc)
			}
		}
	})
}
