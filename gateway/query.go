package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

// Freshness levels (spec 001 §13.6).
const (
	FreshGreen  = "GREEN"
	FreshYellow = "YELLOW"
	FreshRed    = "RED"
)

// FreshnessGreen is the upper bound (exclusive) of GREEN.
const FreshnessGreen = 10 * time.Second

// Freshness classifies the Read Model lag with left-closed, right-open
// intervals: GREEN [0, 10s), YELLOW [10s, red), RED [red, ∞).
func Freshness(lag, red time.Duration) string {
	switch {
	case lag < FreshnessGreen:
		return FreshGreen
	case lag < red:
		return FreshYellow
	}
	return FreshRed
}

// WatermarkDetail is QueryResponse.watermark_detail.
type WatermarkDetail struct {
	// Shards maps every chain carrying facts of the transaction
	// (TX:<txid>, GT:<gtid>, DNS:<cycle>) to its MAX(event_seq); a
	// participating chain with no entry yet is 0, never omitted.
	Shards map[string]int64 `json:"shards"`
}

// QueryResponse is GET /api/transactions/{txid} (spec 001 §13.6), with
// lane, amount and the parties as additive fields.
type QueryResponse struct {
	TxID            string                `json:"txid"`
	State           string                `json:"state"`
	ReasonCode      string                `json:"reason_code,omitempty"`
	Decision        orchestrator.Decision `json:"decision"`
	Execution       Execution             `json:"execution"`
	Case            orchestrator.CaseRef  `json:"case"`
	AsOf            string                `json:"as_of"`
	FreshnessLevel  string                `json:"freshness_level"`
	NextActionHint  string                `json:"next_action_hint"`
	NextRetryAt     string                `json:"next_retry_at,omitempty"`
	Watermark       int64                 `json:"watermark"`
	WatermarkDetail WatermarkDetail       `json:"watermark_detail"`
	// Additive (spec 004 schema evolution: additive and optional).
	Lane                     string         `json:"lane"`
	Amount                   bankapi.Amount `json:"amount"`
	PayerBankID              string         `json:"payer_bank_id"`
	PayeeBankID              string         `json:"payee_bank_id"`
	ExternalSettlementStatus string         `json:"external_settlement_status,omitempty"`
	// CorePosting is where each leg stands at its bank's core (zcgw
	// additive; set when Config.CorePostings is).
	CorePosting *CorePosting `json:"core_posting,omitempty"`
}

// CorePosting is QueryResponse.core_posting: a is the payer's debit at the
// payer bank's core, b the payee's credit at the payee bank's core. Each is
// NONE (no posting queued), or the bank outbox's status of the posting:
// PENDING, CLAIMED, IN_DOUBT or IN_FILE on its way, APPLIED (landed at the
// core), BLOCKED (the core refused it: a Case is open), WRITTEN_OFF. It
// tells "settled at ZC" (state SETTLED) from "landed at the core" (APPLIED).
type CorePosting struct {
	A string `json:"a"`
	B string `json:"b"`
}

// Core posting kinds of CorePostings.Status: a debit leg or a credit leg.
const (
	PostingDebit  = "DEBIT"
	PostingCredit = "CREDIT"
)

// PostingNone is a leg with no posting at its bank.
const PostingNone = "NONE"

// CorePostings is the port through which the gateway reads a leg's
// posting status at a bank (the node routes it to that bank's adapter
// outbox; the coordinator never reads the outbox). Status returns "" when
// the bank holds no posting of that kind for the txid.
type CorePostings interface {
	Status(ctx context.Context, bankID, txid, kind string) (string, error)
}

// corePosting reads both legs of a transfer through the port.
func corePosting(ctx context.Context, p CorePostings, v orchestrator.View) (*CorePosting, error) {
	a, err := p.Status(ctx, v.PayerBankID, v.TxID, PostingDebit)
	if err != nil {
		return nil, err
	}
	b, err := p.Status(ctx, v.PayeeBankID, v.TxID, PostingCredit)
	if err != nil {
		return nil, err
	}
	none := func(s string) string {
		if s == "" {
			return PostingNone
		}
		return s
	}
	return &CorePosting{A: none(a), B: none(b)}, nil
}

// Execution is QueryResponse.execution: a is the payer's debit, b the
// payee's credit; the proof references are the banks' bank_proof_ref
// objects (spec 002 §12.3.3), rendered as JSON objects.
type Execution struct {
	A                 string          `json:"a"`
	B                 string          `json:"b"`
	PayerBankProofRef json.RawMessage `json:"payer_bank_proof_ref,omitempty"`
	PayeeBankProofRef json.RawMessage `json:"payee_bank_proof_ref,omitempty"`
}

// proofRef renders a stored proof reference: a JSON object as is, any
// other non-empty text as a JSON string.
func proofRef(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if b := []byte(s); json.Valid(b) && s[0] == '{' {
		return b
	}
	b, _ := json.Marshal(s)
	return b
}

// hints is the closed 4-value set of next_action_hint.
var hints = map[string]bool{orchestrator.HintWait: true, orchestrator.HintRetryLater: true,
	orchestrator.HintContactPayerBank: true, orchestrator.HintOpenCase: true}

// NewQueryResponse renders a View. The watermark is the maximum of the
// shards, so it never claims to be newer than its breakdown; a hint
// outside the closed set is rendered as WAIT (and is a coordinator bug).
func NewQueryResponse(v orchestrator.View, red time.Duration) QueryResponse {
	shards := make(map[string]int64, len(v.Chains))
	var wm int64
	for _, c := range v.Chains {
		shards[c.Key] = c.MaxSeq
		if c.MaxSeq > wm {
			wm = c.MaxSeq
		}
	}
	if len(shards) == 0 { // the transfer's own chain always participates
		shards["TX:"+v.TxID] = 0
	}
	hint := v.NextActionHint
	if !hints[hint] {
		hint = orchestrator.HintWait
	}
	return QueryResponse{
		TxID: v.TxID, State: v.State, ReasonCode: v.ReasonCode, Decision: v.Decision, Case: v.Case,
		Execution: Execution{A: v.Execution.A, B: v.Execution.B, PayerBankProofRef: proofRef(v.Execution.PayerBankProofRef),
			PayeeBankProofRef: proofRef(v.Execution.PayeeBankProofRef)},
		AsOf: v.AsOf, FreshnessLevel: Freshness(v.ReadModelLag, red), NextActionHint: hint, NextRetryAt: v.NextRetryAt,
		Watermark: wm, WatermarkDetail: WatermarkDetail{Shards: shards},
		Lane: v.Lane, Amount: v.Amount, PayerBankID: v.PayerBankID, PayeeBankID: v.PayeeBankID,
		ExternalSettlementStatus: v.ExternalSettlementStatus,
	}
}
