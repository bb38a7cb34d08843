package scheduler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// ConfigFileName is the schedule file under the data folder.
const ConfigFileName = "jobs.json"

// TZPrefix must start every schedule: business time is JST.
const TZPrefix = "CRON_TZ=Asia/Tokyo "

// Instance says how a job's runs are keyed in the ledger.
type Instance string

const (
	// Daily jobs run once per JST business date (run_key "daily") and are
	// caught up after downtime when catch_up is on.
	Daily Instance = "daily"
	// Repeating jobs run once per trigger minute (run_key "HH:MM" JST); a
	// missed trigger is not caught up, the next one does the work.
	Repeating Instance = "repeating"
)

// JobConfig is one job's schedule.
type JobConfig struct {
	Name        string
	Description string
	Schedule    string // "CRON_TZ=Asia/Tokyo <5-field spec or @descriptor>"
	Instance    Instance
	Enabled     bool          // false: no cron trigger and no catch-up; CLI and HTTP still run it
	CatchUp     bool          // daily jobs only
	Timeout     time.Duration // per run; 0 = none

	parsed cron.Schedule
}

// Next is the first fire time of the schedule strictly after t.
func (j *JobConfig) Next(t time.Time) time.Time { return j.parsed.Next(t) }

// Config is the scheduler configuration: every job's schedule and the
// lease and catch-up settings.
type Config struct {
	LeaseTTL       time.Duration // lease expiry after acquisition or renewal
	RenewEvery     time.Duration // renewal period while running (< LeaseTTL)
	CatchUpMaxDays int           // at most this many missed dates per job per start-up
	Jobs           map[string]*JobConfig
}

// Names lists the configured jobs in name order.
func (c Config) Names() []string {
	out := make([]string, 0, len(c.Jobs))
	for n := range c.Jobs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// defaultJobs is the catalogue of jobs the project runs, with their default
// schedules (docs/jobs.md explains each). A name not listed here is an
// unknown job.
var defaultJobs = []JobConfig{
	{Name: "timeout-sweep", Description: "expire transfers past their deadline (every minute)",
		Schedule: TZPrefix + "* * * * *", Instance: Repeating, Enabled: true, Timeout: 5 * time.Minute},
	{Name: "outbox-drain", Description: "drain the core-posting outbox and recover stale claims",
		Schedule: TZPrefix + "* * * * *", Instance: Repeating, Enabled: true, Timeout: 5 * time.Minute},
	{Name: "idempotency-ttl-cleanup", Description: "delete idempotency keys past their TTL",
		Schedule: TZPrefix + "15 3 * * *", Instance: Daily, Enabled: true, Timeout: 30 * time.Minute},
	{Name: "case-sla-escalation", Description: "escalate Cases past their SLA",
		Schedule: TZPrefix + "*/5 * * * *", Instance: Repeating, Enabled: true, Timeout: 5 * time.Minute},
	{Name: "bulk-window", Description: "close a BULK window and run LSM over its candidates",
		Schedule: TZPrefix + "0 9,11,13,15 * * *", Instance: Repeating, Enabled: true, Timeout: 30 * time.Minute},
	{Name: "deferred-window", Description: "close the day's DEFERRED window and run LSM",
		Schedule: TZPrefix + "0 18 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: time.Hour},
	{Name: "dns-intraday-cutoff", Description: "close the open DNS cycle (kick+settle) and open the next",
		Schedule: TZPrefix + "0 12 * * *", Instance: Repeating, Enabled: true, Timeout: 30 * time.Minute},
	{Name: "dns-kick", Description: "snapshot the day's DNS cycle and compute net positions",
		Schedule: TZPrefix + "0 16 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: 30 * time.Minute},
	{Name: "dns-settle", Description: "settle the day's DNS net positions",
		Schedule: TZPrefix + "15 16 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: 30 * time.Minute},
	{Name: "finality-audit", Description: "full FinalityLog chain audit on demand; every run audits again (eod audits too)",
		Schedule: TZPrefix + "0 2 * * *", Instance: Repeating, Enabled: false, Timeout: time.Hour},
	{Name: "overnight-send", Description: "cut and deliver each batch-window bank's overnight posting file",
		Schedule: TZPrefix + "0 22 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: time.Hour},
	{Name: "overnight-receive", Description: "ingest the cores' result files: each posting APPLIED or BLOCKED",
		Schedule: TZPrefix + "0 6 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: time.Hour},
	{Name: "eod", Description: "end of day: close date, reset limits, audit, reconcile, workbook",
		Schedule: TZPrefix + "30 23 * * *", Instance: Daily, Enabled: true, CatchUp: true, Timeout: 2 * time.Hour},
	{Name: LedgerPruneJob, Description: "delete repeating-job runs older than 30 days from the job ledger",
		Schedule: TZPrefix + "45 4 * * *", Instance: Daily, Enabled: true, Timeout: 10 * time.Minute},
}

// DefaultConfig is the configuration used when jobs.json is absent.
func DefaultConfig() Config {
	c := Config{LeaseTTL: 2 * time.Minute, RenewEvery: 40 * time.Second, CatchUpMaxDays: 7, Jobs: map[string]*JobConfig{}}
	for _, j := range defaultJobs {
		jc := j
		p, err := parseSchedule(jc.Schedule)
		if err != nil {
			panic("scheduler: bad default schedule for " + jc.Name + ": " + err.Error())
		}
		jc.parsed = p
		c.Jobs[jc.Name] = &jc
	}
	return c
}

// ConfigError says which file, job and field of the configuration is wrong
// and why, with the line and column when the document itself is at fault.
// It unwraps to a domainerr INVALID_REQUEST.
type ConfigError struct {
	Source    string // file name
	Line, Col int    // where the offending key or value starts; 0 when not known
	Job       string // "" for a top-level field
	Field     string // "" when the whole document (or job) is bad
	Problem   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Job != "" {
		fmt.Fprintf(&b, ": job %q", e.Job)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// Unwrap returns the domain error (INVALID_REQUEST with source, job and
// field details).
func (e *ConfigError) Unwrap() error {
	return domainerr.New("INVALID_REQUEST", e.Error(), map[string]any{"source": e.Source, "job": e.Job, "field": e.Field})
}

// LoadConfig reads path (normally DataDir/jobs.json). An absent file gives
// DefaultConfig; a present one overrides the defaults field by field.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("scheduler: read %s: %w", path, err)
	}
	return ParseConfig(data, filepath.Base(path))
}

type fileConfig struct {
	LeaseTTL       *string            `json:"lease_ttl"`
	RenewEvery     *string            `json:"renew_every"`
	CatchUpMaxDays *int               `json:"catch_up_max_days"`
	Jobs           map[string]fileJob `json:"jobs"`
}

type fileJob struct {
	Schedule *string `json:"schedule"`
	Instance *string `json:"instance"`
	Enabled  *bool   `json:"enabled"`
	CatchUp  *bool   `json:"catch_up"`
	Timeout  *string `json:"timeout"`
}

// ParseConfig parses a jobs.json document over DefaultConfig. source names
// the document in errors. The document is decoded through strictjson (an
// unknown, repeated or case-mismatched key, a wrong type, an integer out
// of range, invalid UTF-8 or trailing data is refused at its line:column).
// Every error is a *ConfigError.
func ParseConfig(data []byte, source string) (Config, error) {
	c := DefaultConfig()
	var f fileConfig
	if err := decodeFile(data, source, &f); err != nil {
		return Config{}, err
	}
	if f.LeaseTTL != nil {
		d, err := positiveDuration(*f.LeaseTTL)
		if err != nil {
			return Config{}, &ConfigError{Source: source, Field: "lease_ttl", Problem: err.Error()}
		}
		c.LeaseTTL = d
		if f.RenewEvery == nil {
			c.RenewEvery = d / 3
		}
	}
	if f.RenewEvery != nil {
		d, err := positiveDuration(*f.RenewEvery)
		if err != nil {
			return Config{}, &ConfigError{Source: source, Field: "renew_every", Problem: err.Error()}
		}
		c.RenewEvery = d
	}
	if c.RenewEvery >= c.LeaseTTL {
		return Config{}, &ConfigError{Source: source, Field: "renew_every",
			Problem: fmt.Sprintf("%s must be shorter than lease_ttl %s", c.RenewEvery, c.LeaseTTL)}
	}
	if f.CatchUpMaxDays != nil {
		if *f.CatchUpMaxDays < 0 || *f.CatchUpMaxDays > 366 {
			return Config{}, &ConfigError{Source: source, Field: "catch_up_max_days", Problem: fmt.Sprintf("%d is outside 0..366", *f.CatchUpMaxDays)}
		}
		c.CatchUpMaxDays = *f.CatchUpMaxDays
	}
	names := make([]string, 0, len(f.Jobs))
	for n := range f.Jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		jc, ok := c.Jobs[name]
		if !ok {
			return Config{}, &ConfigError{Source: source, Job: name, Field: "name",
				Problem: "unknown job; known jobs: " + strings.Join(c.Names(), ", ")}
		}
		if err := applyJob(jc, f.Jobs[name]); err != nil {
			err.Source, err.Job = source, name
			return Config{}, err
		}
	}
	return c, nil
}

func applyJob(jc *JobConfig, fj fileJob) *ConfigError {
	if fj.Schedule != nil {
		p, err := parseSchedule(*fj.Schedule)
		if err != nil {
			return &ConfigError{Field: "schedule", Problem: err.Error()}
		}
		jc.Schedule, jc.parsed = *fj.Schedule, p
	}
	if fj.Instance != nil {
		switch Instance(*fj.Instance) {
		case Daily, Repeating:
			jc.Instance = Instance(*fj.Instance)
		default:
			return &ConfigError{Field: "instance", Problem: fmt.Sprintf("%q is not daily or repeating", *fj.Instance)}
		}
	}
	if fj.Enabled != nil {
		jc.Enabled = *fj.Enabled
	}
	if fj.CatchUp != nil {
		jc.CatchUp = *fj.CatchUp
	}
	if jc.CatchUp && jc.Instance != Daily {
		return &ConfigError{Field: "catch_up", Problem: "only daily jobs can be caught up"}
	}
	if fj.Timeout != nil {
		if *fj.Timeout == "0" || *fj.Timeout == "" {
			jc.Timeout = 0
		} else {
			d, err := positiveDuration(*fj.Timeout)
			if err != nil {
				return &ConfigError{Field: "timeout", Problem: err.Error()}
			}
			jc.Timeout = d
		}
	}
	return nil
}

// decodeFile decodes jobs.json into f through strictjson; a refusal is a
// *ConfigError at the line:column of the offending key or value, naming
// the job and field from the member's JSON Pointer (/jobs/<job>/<field>).
func decodeFile(data []byte, source string, f *fileConfig) error {
	err := strictjson.Decode(data, f, strictjson.Options{DisallowUnknownFields: true, Config: true})
	e, ok := strictjson.As(err)
	if !ok {
		return err
	}
	ce := &ConfigError{Source: source, Problem: e.Reason()}
	ce.Line, ce.Col = strictjson.Position(data, e.Offset)
	var segs []string
	if e.Path != "" {
		segs = strings.Split(e.Path[1:], "/")
		for i, s := range segs {
			segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		}
	}
	if len(segs) >= 2 && segs[0] == "jobs" {
		ce.Job, segs = segs[1], segs[2:]
	}
	ce.Field = strings.Join(segs, ".")
	return ce
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 90s or 2m", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func parseSchedule(spec string) (cron.Schedule, error) {
	if !strings.HasPrefix(spec, TZPrefix) {
		return nil, fmt.Errorf("%q must start with %q (business time is JST)", spec, TZPrefix)
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", spec, err)
	}
	return s, nil
}
