package params

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Name is a PR-* parameter name (spec 002 §12.9).
type Name string

// The parameters zcgw reads. Spec 002 §12.9 names PR-HV-THRESHOLD; the
// others are the "所定時間" (prescribed times) of §12.8's categories that
// zcgw implements, registered under a name as §12.9.1 requires.
const (
	HVThreshold        Name = "PR-HV-THRESHOLD"
	ExecTimeout        Name = "PR-EXEC-TIMEOUT"
	PayeeProofTimeout  Name = "PR-PAYEE-PROOF-TIMEOUT"
	SuspendedTimeout   Name = "PR-SUSPENDED-TIMEOUT"
	AdapterDownAfter   Name = "PR-ADAPTER-DOWN-AFTER"
	CaseSLA            Name = "PR-CASE-SLA"
	SignatureClockSkew Name = "PR-SIGNATURE-SKEW"
	// Request to pay (§12.8 "RTP"): PR-RTP-ATTEMPT-MAX is the spec's name;
	// PR-RTP-MAX-LIFETIME names the longest expires_at a request may ask.
	// PR-RTP-ATTEMPT-SCHEDULE is the spec's "recommended times" of the
	// automatic re-attempts (JST wall-clock times, schedule.go).
	RtpAttemptMax      Name = "PR-RTP-ATTEMPT-MAX"
	RtpMaxLifetime     Name = "PR-RTP-MAX-LIFETIME"
	RtpAttemptSchedule Name = "PR-RTP-ATTEMPT-SCHEDULE"
	// Per-bank limits (Participants columns, spec 003): they exist per
	// bank only and change through the ledger with a bank_id.
	HLimit           Name = "PR-H-LIMIT"
	TxAmountLimit    Name = "PR-TX-AMOUNT-LIMIT"
	DailyAmountLimit Name = "PR-DAILY-AMOUNT-LIMIT"
)

// The defaults: the values the reading components used before the ledger.
const (
	DefaultHVThreshold       int64 = 100_000_000 // JPY (spec 003 Participants: 1 億円)
	DefaultExecTimeout             = 60 * time.Second
	DefaultPayeeProofTimeout       = 60 * time.Second
	DefaultSuspendedTimeout        = 24 * time.Hour
	DefaultAdapterDownAfter  int64 = 3
	DefaultCaseSLA                 = 4 * time.Hour
	DefaultSignatureSkew           = 5 * time.Minute
	DefaultRtpAttemptMax     int64 = 3 // 003 RtpRequests.max_attempts DEFAULT 3
	DefaultRtpMaxLifetime          = 30 * 24 * time.Hour
	// DefaultRtpAttemptSchedule is no schedule: a re-attempt follows the
	// work queue's backoff.
	DefaultRtpAttemptSchedule int64 = 0
	// DefaultLease is the longest work-item lease an orchestrator takes
	// by default (orchestrator.Config.Lease); a timeout it races must stay
	// longer (docs/orchestrator.md, "Owners, restart and leases").
	DefaultLease = 30 * time.Second
)

// Kind is how a parameter's value is written and stored.
type Kind string

// The kinds. Every value is stored as an integer: JPY for an amount,
// whole seconds for a duration, a plain number for a count, and for a
// schedule a set of JST half-hour slots (schedule.go).
const (
	KindAmount   Kind = "AMOUNT"
	KindDuration Kind = "DURATION"
	KindCount    Kind = "COUNT"
	KindSchedule Kind = "SCHEDULE"
)

// Def declares one parameter.
type Def struct {
	Name    Name   `json:"name"`
	Kind    Kind   `json:"kind"`
	Unit    string `json:"unit"` // "JPY", "s", "count"
	Min     int64  `json:"min"`
	Max     int64  `json:"max"`
	Default int64  `json:"default"`
	// RacesLease marks a timeout that acts on a claimed work item: it must
	// stay longer than the orchestrator's lease.
	RacesLease bool   `json:"races_lease,omitempty"`
	ReadBy     string `json:"read_by"` // the component that reads it
	Doc        string `json:"doc"`
	// BankColumn is the Participants column holding a per-bank value
	// ("" : no per-bank value). BankOnly: no system-wide value at all.
	// Nullable: a bank may have none (0, written "none": no limit, or the
	// system-wide value).
	BankColumn string `json:"bank_column,omitempty"`
	BankOnly   bool   `json:"bank_only,omitempty"`
	Nullable   bool   `json:"nullable,omitempty"`
}

func secs(d time.Duration) int64 { return int64(d / time.Second) }

var defs = []Def{
	{Name: HVThreshold, Kind: KindAmount, Unit: "JPY", Min: 1, Max: 1_000_000_000_000_000, Default: DefaultHVThreshold,
		BankColumn: "hv_threshold", Nullable: true,
		ReadBy: "coordinator/orchestrator (Submit)",
		Doc:    "EXPRESS and STANDARD transfers strictly above it escalate to HIGH_VALUE; a participant's own hv_threshold overrides it"},
	{Name: ExecTimeout, Kind: KindDuration, Unit: "s", Min: 1, Max: secs(24 * time.Hour), Default: secs(DefaultExecTimeout), RacesLease: true,
		ReadBy: "coordinator/orchestrator (timeout sweep, execute-debit deadline)",
		Doc:    "DECIDED_TO_SETTLE without the payer's execution this long -> SUSPENDED (SUSPEND_EXEC_TIMEOUT)"},
	{Name: PayeeProofTimeout, Kind: KindDuration, Unit: "s", Min: 1, Max: secs(24 * time.Hour), Default: secs(DefaultPayeeProofTimeout), RacesLease: true,
		ReadBy: "coordinator/orchestrator (timeout sweep)",
		Doc:    "PAYER_EXEC_CONFIRMED without the payee's execution this long -> SUSPENDED (SUSPEND_PAYEE_PROOF_TIMEOUT)"},
	{Name: SuspendedTimeout, Kind: KindDuration, Unit: "s", Min: 60, Max: secs(30 * 24 * time.Hour), Default: secs(DefaultSuspendedTimeout), RacesLease: true,
		ReadBy: "coordinator/orchestrator (timeout sweep)",
		Doc:    "SUSPENDED this long -> FAILED_EXECUTION (FAILED_EXEC_TIMEOUT) with a Case"},
	{Name: AdapterDownAfter, Kind: KindCount, Unit: "count", Min: 1, Max: 100, Default: DefaultAdapterDownAfter,
		ReadBy: "coordinator/orchestrator (execution retries)",
		Doc:    "consecutive BANK_ERROR/BANK_TIMEOUT answers to an execution command before the transfer is parked (SUSPEND_ADAPTER_DOWN)"},
	{Name: CaseSLA, Kind: KindDuration, Unit: "s", Min: 60, Max: secs(90 * 24 * time.Hour), Default: secs(DefaultCaseSLA),
		ReadBy: "coordinator/cases (OpenCase)",
		Doc:    "the SLA deadline of a new Case whose opener names none; SweepSLA escalates it after"},
	{Name: SignatureClockSkew, Kind: KindDuration, Unit: "s", Min: 10, Max: secs(time.Hour), Default: secs(DefaultSignatureSkew),
		ReadBy: "coordinator/signing (Verifier)",
		Doc:    "the accepted difference, either way, between a signature's time and the verifier's clock (TIMESTAMP_SKEW)"},
	{Name: RtpAttemptMax, Kind: KindCount, Unit: "count", Min: 1, Max: 20, Default: DefaultRtpAttemptMax,
		ReadBy: "coordinator/orchestrator (RequestRtp: the request's max_attempts)",
		Doc:    "rtp-notify deliveries tried for a new request to pay before it is FAILED (RTP_ATTEMPTS_EXHAUSTED); a request keeps the value it was created with"},
	{Name: RtpMaxLifetime, Kind: KindDuration, Unit: "s", Min: 60, Max: secs(90 * 24 * time.Hour), Default: secs(DefaultRtpMaxLifetime),
		ReadBy: "coordinator/orchestrator (RequestRtp)",
		Doc:    "the furthest ahead a new request to pay's expires_at may be (INVALID_REQUEST beyond it)"},
	{Name: RtpAttemptSchedule, Kind: KindSchedule, Unit: "JST times", Min: 0, Max: allSlots, Default: DefaultRtpAttemptSchedule,
		ReadBy: "coordinator/orchestrator (rtp-notify re-attempts)",
		Doc:    "the JST times (HH:MM on the hour or half hour, e.g. 09:00,12:00,15:00) of rtp-notify's automatic re-attempts: after a failed delivery the next one waits for the next listed time of the same JST day before expires_at, and with none left the request is FAILED (RTP_ATTEMPTS_EXHAUSTED); none: the work queue's backoff"},

	{Name: HLimit, Kind: KindAmount, Unit: "JPY", Min: 0, Max: 1_000_000_000_000_000, BankColumn: "h_limit", BankOnly: true,
		ReadBy: "coordinator/hlimit (H reservations)",
		Doc:    "a bank's H limit: its reservations in flight may not exceed it (H_LIMIT_EXCEEDED)"},
	{Name: TxAmountLimit, Kind: KindAmount, Unit: "JPY", Min: 1, Max: 1_000_000_000_000_000, BankColumn: "tx_amount_limit", BankOnly: true, Nullable: true,
		ReadBy: "coordinator/orchestrator (Submit)",
		Doc:    "a bank's per-transfer limit as payer (AMOUNT_EXCEEDS_TX_LIMIT); none: no limit"},
	{Name: DailyAmountLimit, Kind: KindAmount, Unit: "JPY", Min: 1, Max: 1_000_000_000_000_000, BankColumn: "daily_amount_limit", BankOnly: true, Nullable: true,
		ReadBy: "coordinator/hlimit (daily total)",
		Doc:    "a bank's daily total as payer (DAILY_LIMIT_EXCEEDED), reset by EOD; none: no limit"},
}

var byName = func() map[Name]Def {
	m := map[Name]Def{}
	for _, d := range defs {
		m[d.Name] = d
	}
	return m
}()

// Defs lists every declared parameter, sorted by name.
func Defs() []Def {
	out := append([]Def(nil), defs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the declaration of name; an undeclared name is NOT_FOUND.
func Lookup(name Name) (Def, error) {
	d, ok := byName[name]
	if !ok {
		return Def{}, domainerr.New("NOT_FOUND", "no such parameter: "+string(name)+" (zcgw params list shows them)",
			map[string]any{"field": "name", "value": string(name)})
	}
	return d, nil
}

// Check refuses a value outside the parameter's bounds (INVALID_REQUEST
// naming the parameter, the value and the bounds).
func (d Def) Check(v int64) error {
	if v < d.Min || v > d.Max {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: %s is outside its bounds [%s, %s]", d.Name, d.Format(v), d.Format(d.Min), d.Format(d.Max)),
			map[string]any{"field": "value", "parameter": string(d.Name), "value": v, "min": d.Min, "max": d.Max, "unit": d.Unit})
	}
	return nil
}

// Bounds writes the bounds for an operator: "min .. max" as Format writes
// them; for a schedule the times it may list.
func (d Def) Bounds() string {
	if d.Kind == KindSchedule {
		return "none or times 00:00 .. 23:30 (half hours)"
	}
	return d.Format(d.Min) + " .. " + d.Format(d.Max)
}

// maxSeconds is the most whole seconds a time.Duration holds.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// CheckBank is Check for a bank's value: a nullable parameter also takes
// 0 (none).
func (d Def) CheckBank(v int64) error {
	if d.Nullable && v == 0 {
		return nil
	}
	return d.Check(v)
}

// Format writes v the way an operator reads it: JPY with no grouping, a
// duration as Go writes it ("1m0s", "24h0m0s"), a count as a number.
func (d Def) Format(v int64) string {
	if d.Kind == KindSchedule {
		return FormatSchedule(v)
	}
	if d.Kind == KindDuration {
		if v > maxSeconds || v < -maxSeconds {
			return strconv.FormatInt(v, 10) + "s" // beyond time.Duration: only in a refusal
		}
		return (time.Duration(v) * time.Second).String()
	}
	return strconv.FormatInt(v, 10)
}

// Parse reads an operator's value: an integer for an amount or a count; for
// a duration a Go duration ("90s", "4h", "1h30m") of whole seconds, or an
// integer of seconds; for a schedule JST times ("09:00,12:00,15:00",
// "none"; ParseSchedule) or the stored integer. It does not check the
// bounds (Check does).
func (d Def) Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if d.Nullable && s == "none" {
		return 0, nil
	}
	bad := func(why string) error {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s: %q is not a value: %s", d.Name, s, why),
			map[string]any{"field": "value", "parameter": string(d.Name), "value": s})
	}
	if d.Kind == KindSchedule {
		return parseSchedule(d.Name, s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if d.Kind == KindDuration && (n > maxSeconds || n < -maxSeconds) {
			return 0, bad("too many seconds")
		}
		return n, nil
	}
	if d.Kind != KindDuration {
		return 0, bad("want an integer (" + d.Unit + ")")
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad(`want a duration such as "90s", "4h", "1h30m", or whole seconds`)
	}
	if dur%time.Second != 0 {
		return 0, bad("durations are whole seconds")
	}
	return int64(dur / time.Second), nil
}
