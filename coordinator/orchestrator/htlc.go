package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// LaneHTLC is Transactions.lane of an HTLC (spec 001 ch. 15). It is not a
// value of POST /api/transfers (USE_HTLC_ENDPOINT): HTLCs are created by
// CreateHTLC (POST /api/htlc/create).
const LaneHTLC = "HTLC"

// HashAlgSHA256 is the only hash algorithm an HTLC may name (001 §15.2).
const HashAlgSHA256 = "SHA-256"

// ConditionChecker evaluates the condition expression attached to an
// HTLC at claim time (001 §15.5). The orchestrator does not judge
// conditions itself: it stores the expression, hands it to the checker,
// records HtlcConditionsEvaluated with what the checker answered, and
// lets the claim proceed only when Met is true. An error is treated as
// "not met" (fail closed). Config.Conditions nil: coordinator/conditions
// on the coordinator database (ConditionsChecker).
type ConditionChecker interface {
	CheckHTLC(ctx context.Context, in ConditionInput) (ConditionOutcome, error)
}

// ConditionInput is what a claim asks the checker about.
type ConditionInput struct {
	HtlcID, TxID string
	Expr         json.RawMessage // HtlcContracts.condition_expr_json
	Now          time.Time       // the claim's instant (Clock), recorded with the outcome
}

// ConditionOutcome is the checker's answer; Detail (satisfied templates,
// quorum breakdown, ...) is recorded in the HtlcConditionsEvaluated payload.
type ConditionOutcome struct {
	Met    bool
	Detail map[string]any
	// Equivocated lists the templates whose attestations disagree (PASS
	// and FAIL for the HTLC): the claim opens an ATTESTATION_EQUIVOCATION
	// Case for each (000 §11.2-c).
	Equivocated []string
}

// CrossChain is the cross-chain part of an HTLC create (003 HtlcContracts,
// 001 §15.6): the same hashlock also locks an escrow on Source.
type CrossChain struct {
	Source             string `json:"source"`
	OnchainTimelock    string `json:"onchain_timelock"` // strictly before the outer timelock
	OnchainChainClass  string `json:"onchain_chain_class"`
	OnchainCryptoSuite string `json:"onchain_crypto_suite,omitempty"`
	// OnchainMinWatchers is the n of the watcher quorum (distinct watcher
	// operators whose observations must agree); 0 takes the rail's default
	// (PUBLIC 2, PRIVATE/PERMISSIONED 1, 000 ch. 10) and a value below
	// that default is refused, so a declared class never weakens it.
	OnchainMinWatchers int `json:"onchain_min_watchers,omitempty"`
}

// HtlcCreate is the body of POST /api/htlc/create (001 §15.3 step 1,
// §13.5): amount, parties, hashlock and timelock.
type HtlcCreate struct {
	TxID     string         `json:"txid,omitempty"`
	Amount   bankapi.Amount `json:"amount"`
	Payer    Party          `json:"payer"`
	Payee    Party          `json:"payee"`
	Purpose  string         `json:"purpose,omitempty"`
	HashAlg  string         `json:"hash_alg"`
	Hashlock string         `json:"hashlock"`
	// Timelock is timelock_expires_at: the outer timelock, RFC3339.
	Timelock string `json:"timelock_expires_at"`
	// ConditionExpr is the condition expression tree ({template_id} |
	// {op, operands} | {op:THRESHOLD, k, operands}), stored as
	// condition_expr_json (001 §15.5).
	ConditionExpr json.RawMessage `json:"condition_expr,omitempty"`
	// ConditionTemplateID is the single template a claim-by-attestation
	// presents a PASS under (003 condition_template_id); it must be a
	// whitelisted ACTIVE template.
	ConditionTemplateID string      `json:"condition_template_id,omitempty"`
	CrossChain          *CrossChain `json:"cross_chain,omitempty"`
}

// HtlcView is an HTLC as its parties see it (create, claim and GET).
type HtlcView struct {
	HtlcID                   string         `json:"htlc_id"`
	TxID                     string         `json:"txid"`
	State                    string         `json:"state"`    // HtlcContracts.state
	TxState                  string         `json:"tx_state"` // Transactions.state
	ReasonCode               string         `json:"reason_code,omitempty"`
	HashAlg                  string         `json:"hash_alg"`
	Hashlock                 string         `json:"hashlock"`
	Timelock                 string         `json:"timelock_expires_at"`
	Amount                   bankapi.Amount `json:"amount"`
	PayerBankID              string         `json:"payer_bank_id"`
	PayeeBankID              string         `json:"payee_bank_id"`
	SecretVerified           bool           `json:"secret_verified"`
	AuthorityRecheckRequired bool           `json:"authority_recheck_required"`
	HasConditions            bool           `json:"has_conditions"`
	CrossChainSource         string         `json:"cross_chain_source,omitempty"`
	OnchainTimelock          string         `json:"onchain_timelock,omitempty"`
	OnchainFinalityClass     string         `json:"onchain_finality_class,omitempty"`
	OnchainQuantumRisk       string         `json:"onchain_quantum_risk,omitempty"`
	OnchainMinConfirmations  int            `json:"onchain_min_confirmations,omitempty"`
	OnchainMinWatchers       int            `json:"onchain_min_watchers,omitempty"`
	ConditionTemplateID      string         `json:"condition_template_id,omitempty"`
	Owner                    string         `json:"owner"`
	// Replayed: the same create key and body, or a claim of an HTLC
	// already claimed with the same preimage (001 §15.4: same result).
	Replayed bool `json:"-"`
}

// HtlcClaim is the body of POST /api/htlc/{htlc_id}/claim (001 §13.5,
// §15.4). The preimage is checked against the hashlock and never stored
// or logged.
type HtlcClaim struct {
	Preimage          string `json:"preimage"` // hex
	PresenterOrgID    string `json:"presenter_org_id,omitempty"`
	PresenterSystemID string `json:"presenter_system_id,omitempty"`
	PresentedAt       string `json:"presented_at,omitempty"`
	PresentSignature  string `json:"present_signature,omitempty"`
}

// newHtlcID returns "HTLC-" and 24 hex digits.
func newHtlcID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "HTLC-" + hex.EncodeToString(b[:])
}

func htlcIdemKey(issuer, key string) string { return onceKey(scopeHtlc, issuer, key) }

// hashOf is the lower-case hex SHA-256 of a hex preimage.
func hashOf(preimageHex string) (string, error) {
	b, err := hex.DecodeString(strings.TrimSpace(preimageHex))
	if err != nil || len(b) == 0 {
		return "", invalidField("preimage", "must be non-empty hex", "<redacted>")
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// validateHtlc checks a create at the input boundary.
func validateHtlc(req HtlcCreate, now time.Time) (timelock time.Time, err error) {
	if req.Amount.Value <= 0 || req.Amount.Value > MaxAmountValue {
		return timelock, domainerr.New("INVALID_AMOUNT", fmt.Sprintf("amount.value must be in 1..%d (MAX_AMOUNT_VALUE)", int64(MaxAmountValue)),
			map[string]any{"field": "amount.value", "value": req.Amount.Value})
	}
	if req.Amount.Currency != "JPY" {
		return timelock, domainerr.New("INVALID_CURRENCY", "an HTLC is JPY only (001 §17.4: the HTLC lane has no currency dimension)",
			map[string]any{"field": "amount.currency", "value": req.Amount.Currency})
	}
	if err := ident.CheckAll(ident.Field{Name: "txid", Kind: ident.TxID, Value: req.TxID},
		ident.Field{Name: "payer.bank_id", Kind: ident.BankID, Value: req.Payer.BankID},
		ident.Field{Name: "payer.account_hash", Kind: ident.AccountHash, Value: req.Payer.AccountHash},
		ident.Field{Name: "payee.bank_id", Kind: ident.BankID, Value: req.Payee.BankID},
		ident.Field{Name: "payee.account_hash", Kind: ident.AccountHash, Value: req.Payee.AccountHash},
		ident.Field{Name: "purpose", Kind: ident.Purpose, Value: req.Purpose}); err != nil {
		return timelock, err
	}
	for _, f := range []struct{ name, v string }{{"payer.bank_id", req.Payer.BankID}, {"payer.account_hash", req.Payer.AccountHash},
		{"payee.bank_id", req.Payee.BankID}, {"payee.account_hash", req.Payee.AccountHash}, {"hashlock", req.Hashlock},
		{"timelock_expires_at", req.Timelock}} {
		if strings.TrimSpace(f.v) == "" {
			return timelock, missingField(f.name)
		}
	}
	if req.HashAlg != HashAlgSHA256 {
		return timelock, invalidField("hash_alg", "must be SHA-256 (001 §15.2)", req.HashAlg)
	}
	if b, err := hex.DecodeString(req.Hashlock); err != nil || len(b) != sha256.Size || req.Hashlock != strings.ToLower(req.Hashlock) {
		return timelock, invalidField("hashlock", "must be 64 lower-case hex digits (SHA-256)", req.Hashlock)
	}
	if timelock, err = clock.ParseStamp(req.Timelock); err != nil {
		return timelock, invalidField("timelock_expires_at", "must be RFC3339", req.Timelock)
	}
	if !timelock.After(now) {
		return timelock, domainerr.New("EXPIRED", "timelock_expires_at is not in the future", map[string]any{"field": "timelock_expires_at", "value": req.Timelock})
	}
	if len(req.ConditionExpr) > 0 {
		if err := checkConditionExpr(req.ConditionExpr); err != nil {
			return timelock, err
		}
	}
	if cc := req.CrossChain; cc != nil {
		if strings.TrimSpace(cc.Source) == "" {
			return timelock, missingField("cross_chain.source")
		}
		if cc.OnchainChainClass == "" {
			return timelock, domainerr.New("ONCHAIN_CHAIN_CLASS_REQUIRED", "cross_chain.onchain_chain_class is required", map[string]any{"field": "cross_chain.onchain_chain_class"})
		}
		if _, ok := finalityClass[cc.OnchainChainClass]; !ok {
			return timelock, invalidField("cross_chain.onchain_chain_class", "must be PUBLIC, PRIVATE or PERMISSIONED", cc.OnchainChainClass)
		}
		inner, err := clock.ParseStamp(cc.OnchainTimelock)
		if err != nil {
			return timelock, invalidField("cross_chain.onchain_timelock", "must be RFC3339", cc.OnchainTimelock)
		}
		if cc.OnchainMinWatchers != 0 && cc.OnchainMinWatchers < defaultMinWatchers(cc.OnchainChainClass) {
			return timelock, invalidField("cross_chain.onchain_min_watchers",
				fmt.Sprintf("must be at least %d for a %s chain", defaultMinWatchers(cc.OnchainChainClass), cc.OnchainChainClass), cc.OnchainMinWatchers)
		}
		if !inner.Before(timelock) {
			return timelock, domainerr.New("ONCHAIN_TIMELOCK_INVALID", "cross_chain.onchain_timelock must be strictly before timelock_expires_at",
				map[string]any{"field": "cross_chain.onchain_timelock", "onchain_timelock": cc.OnchainTimelock, "timelock": req.Timelock})
		}
	}
	return timelock, nil
}

// defaultMinWatchers is the rail's default watcher quorum (000 ch. 10
// "Watcher 定足数": PUBLIC 2, deterministic chains 1).
func defaultMinWatchers(chainClass string) int {
	if chainClass == "PUBLIC" {
		return 2
	}
	return 1
}

// finalityClass derives onchain_finality_class from onchain_chain_class
// (001 §15.6).
var finalityClass = map[string]string{"PUBLIC": "PROBABILISTIC", "PRIVATE": "DETERMINISTIC", "PERMISSIONED": "DETERMINISTIC"}

// quantumRisk classifies a signature suite (001 §15.6): classical suites
// VULNERABLE, PQ suites RESISTANT, anything else UNKNOWN.
func quantumRisk(suite string) string {
	switch strings.ToLower(suite) {
	case "secp256k1", "ed25519", "ecdsa-p256", "rsa":
		return "VULNERABLE"
	case "dilithium2", "dilithium3", "dilithium5", "falcon", "sphincs+":
		return "RESISTANT"
	}
	return "UNKNOWN"
}

// checkConditionExpr is the structural check of a condition expression
// (004 CONDITION_EXPR_INVALID), by coordinator/conditions' parser: the one
// grammar of condition expressions (leaves {template_id}, AND/OR/THRESHOLD
// nodes, bounded depth and operands). The offset, token and why of a
// malformed expression are in the error's details.
func checkConditionExpr(raw json.RawMessage) error {
	if _, err := conditions.Parse(raw); err != nil {
		return conditions.Invalid(err)
	}
	return nil
}

// recheckRequired reports whether an HTLC created at now with timelock
// must be rechecked (AML, check_type RECHECK) before its funds are
// released: its timelock runs past the end of the current JST business
// day (001 §15.4).
func recheckRequired(now, timelock time.Time) bool {
	return clock.BusinessDate(timelock) != clock.BusinessDate(now)
}

// CreateHTLC accepts POST /api/htlc/create from issuer (the payer bank)
// under idempotencyKey, in one write transaction: the writable gate,
// validation, participants and limits, the daily total, the Transactions
// row in RECEIVED (PaymentInitiated, flow HTLC) with its HtlcContracts row
// in HTLC_RECEIVED, and the work item that locks it. The same key and body
// answer the stored view (Replayed); a different body is
// IDEMPOTENCY_KEY_CONFLICT.
func (o *Orchestrator) CreateHTLC(ctx context.Context, req HtlcCreate, idempotencyKey, issuer string) (HtlcView, error) {
	if issuer != req.Payer.BankID {
		return HtlcView{}, domainerr.New("UNAUTHORIZED", "a participant may only create an HTLC as its payer bank",
			map[string]any{"field": "payer.bank_id", "issuer": issuer})
	}
	out, replayed, err := registerOnce(ctx, o, scopeHtlc, issuer, idempotencyKey, req, func(tx *store.Tx, body []byte) (HtlcView, error) {
		v, err := o.createHtlcTx(ctx, tx, req, idempotencyKey, issuer, body)
		if err != nil {
			return v, err
		}
		o.log.InfoContext(ctx, "htlc.created", "htlc_id", v.HtlcID, "txid", v.TxID, "payer_bank_id", v.PayerBankID,
			"payee_bank_id", v.PayeeBankID, "amount", v.Amount.Value, "timelock", v.Timelock, "recheck", v.AuthorityRecheckRequired)
		return v, nil
	})
	out.Replayed = replayed
	return out, err
}

func (o *Orchestrator) createHtlcTx(ctx context.Context, tx *store.Tx, req HtlcCreate, key, issuer string, body []byte) (HtlcView, error) {
	now := o.clk.Now()
	timelock, err := validateHtlc(req, now)
	if err != nil {
		return HtlcView{}, err
	}
	if req.TxID != "" && !ident.InNamespace(req.TxID, issuer) {
		return HtlcView{}, ErrTxIDNotUsable(issuer)
	}
	if req.Payer.BankID == req.Payee.BankID && req.Payer.AccountHash == req.Payee.AccountHash {
		return HtlcView{}, invalidField("payee.account_hash", "payer and payee are the same account", req.Payee.AccountHash)
	}
	payer, err := participants.GetInTx(ctx, tx, req.Payer.BankID)
	if err != nil {
		return HtlcView{}, err
	}
	payee, err := participants.GetInTx(ctx, tx, req.Payee.BankID)
	if err != nil {
		return HtlcView{}, err
	}
	for _, p := range []participants.Participant{payer, payee} {
		if !p.IsActive {
			return HtlcView{}, domainerr.New("PARTICIPANT_NOT_FOUND", "participant is not active", map[string]any{"bank_id": p.BankID})
		}
	}
	if payer.ParticipationMode == participants.ModeReceiveOnly {
		return HtlcView{}, domainerr.New("PARTICIPATION_MODE_RECEIVE_ONLY", "the payer bank participates as RECEIVE_ONLY", map[string]any{"bank_id": payer.BankID})
	}
	if payee.ParticipationMode == participants.ModeSendOnly {
		return HtlcView{}, domainerr.New("INVALID_REQUEST", "the payee bank participates as SEND_ONLY and cannot receive",
			map[string]any{"field": "payee.bank_id", "bank_id": payee.BankID})
	}
	if err := o.checkTxLimit(ctx, tx, payer, req.Amount.Value); err != nil {
		return HtlcView{}, err
	}
	daily, err := o.h.ConsumeDaily(ctx, tx, payer.BankID, req.Amount.Value)
	if err != nil {
		return HtlcView{}, err
	}
	txid := req.TxID
	if txid == "" {
		txid = newTxID()
	}
	stamp := clock.Stamp(now)
	c := lane.HtlcContract{HtlcID: newHtlcID(), TxID: txid, Hashlock: req.Hashlock, Timelock: clock.Stamp(timelock),
		Amount: req.Amount.Value, PayerBankID: req.Payer.BankID, PayeeBankID: req.Payee.BankID,
		AuthorityRecheckRequired: recheckRequired(now, timelock), CreatedAt: stamp}
	if len(req.ConditionExpr) > 0 {
		c.ConditionExprJSON = string(req.ConditionExpr)
	}
	if req.ConditionTemplateID != "" {
		tpl, err := conditions.GetTemplateTx(ctx, tx, req.ConditionTemplateID)
		if err != nil {
			return HtlcView{}, err
		}
		if tpl.Status != conditions.TemplateActive {
			return HtlcView{}, domainerr.New("TEMPLATE_NOT_WHITELISTED", "condition_template_id is not an ACTIVE template",
				map[string]any{"field": "condition_template_id", "template_id": req.ConditionTemplateID, "status": tpl.Status})
		}
		c.ConditionTemplateID = req.ConditionTemplateID
	}
	if cc := req.CrossChain; cc != nil {
		inner, _ := clock.ParseStamp(cc.OnchainTimelock)
		c.CrossChainSource, c.OnchainTimelock, c.OnchainChainClass = cc.Source, clock.Stamp(inner), cc.OnchainChainClass
		c.OnchainCryptoSuite, c.OnchainQuantumRisk = cc.OnchainCryptoSuite, quantumRisk(cc.OnchainCryptoSuite)
		c.OnchainFinalityClass = finalityClass[cc.OnchainChainClass]
		c.OnchainMinConfirmations = 1 // deterministic finality: one confirmation (001 §15.6)
		if cc.OnchainChainClass == "PUBLIC" {
			c.OnchainMinConfirmations = 2
		}
		c.OnchainMinWatchers = max(cc.OnchainMinWatchers, defaultMinWatchers(cc.OnchainChainClass))
	}
	extra := map[string]any{"schema_version": "1.0"}
	if req.Purpose != "" {
		extra["purpose"] = req.Purpose
	}
	payload := map[string]any{"flow": LaneHTLC, "issuer_bank_id": issuer, "lane": LaneHTLC, "htlc_id": c.HtlcID,
		"hash_alg": HashAlgSHA256, "hashlock": c.Hashlock, "timelock": c.Timelock,
		"authority_recheck_required": c.AuthorityRecheckRequired, "has_conditions": c.ConditionExprJSON != "",
		"amount": req.Amount, "payer_bank_id": req.Payer.BankID, "payee_bank_id": req.Payee.BankID,
		hlimit.DailyDateKey: daily.BusinessDate}
	if c.CrossChainSource != "" {
		payload["cross_chain"] = map[string]any{"source": c.CrossChainSource, "onchain_timelock": c.OnchainTimelock,
			"onchain_chain_class": c.OnchainChainClass, "onchain_finality_class": c.OnchainFinalityClass,
			"onchain_quantum_risk": c.OnchainQuantumRisk, "onchain_min_confirmations": c.OnchainMinConfirmations,
			"onchain_min_watchers": c.OnchainMinWatchers}
	}
	if c.ConditionTemplateID != "" {
		payload["condition_template_id"] = c.ConditionTemplateID
	}
	ins, err := o.lanes.InsertTxInTx(ctx, tx, lane.NewTx{TxID: txid, Lane: LaneHTLC, AmountValue: req.Amount.Value, Currency: "JPY",
		PayerBankID: req.Payer.BankID, PayerAccountHash: req.Payer.AccountHash, PayeeBankID: req.Payee.BankID,
		PayeeAccountHash: req.Payee.AccountHash, IdempotencyKey: htlcIdemKey(issuer, key), ExpiresAt: c.Timelock,
		ExtraColumns: extra, Payload: payload, SideUpdates: lane.InsertHtlc(c)})
	if err != nil {
		return HtlcView{}, err
	}
	if !ins.Inserted {
		return HtlcView{}, invalidField("txid", "a transaction with this txid already exists", txid)
	}
	if c.CrossChainSource != "" {
		// 001 §15.6: the classification is evidence of its own, written
		// at create in the same commit.
		if _, err := o.lanes.RecordInTx(ctx, tx, lane.Record{TxID: txid, State: lane.Received, EventType: finality.OnchainFinalityClassified,
			Payload: map[string]any{"htlc_id": c.HtlcID, "cross_chain_source": c.CrossChainSource, "onchain_chain_class": c.OnchainChainClass,
				"onchain_finality_class": c.OnchainFinalityClass, "onchain_crypto_suite": c.OnchainCryptoSuite,
				"onchain_quantum_risk": c.OnchainQuantumRisk, "onchain_min_confirmations": c.OnchainMinConfirmations,
				"onchain_min_watchers": c.OnchainMinWatchers}}); err != nil {
			return HtlcView{}, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO OrchestratorTransfers (`+progressColumns+`) VALUES (?, ?, ?, ?, ?)`,
		txid, issuer, string(body), stamp, stamp); err != nil {
		return HtlcView{}, wrapDB("insert progress", err)
	}
	if err := o.enqueue(ctx, tx, KindDrive, txid, LaneHTLC, StatusReady, now); err != nil {
		return HtlcView{}, err
	}
	return htlcView(c, string(lane.Received), "", lane.OwnerZC), nil
}

func htlcView(c lane.HtlcContract, txState, reason, owner string) HtlcView {
	state := c.State
	if state == "" {
		state = lane.HtlcReceived
	}
	v := HtlcView{HtlcID: c.HtlcID, TxID: c.TxID, State: string(state), TxState: txState, ReasonCode: reason, HashAlg: HashAlgSHA256,
		Hashlock: c.Hashlock, Timelock: c.Timelock, Amount: bankapi.Amount{Value: c.Amount, Currency: "JPY"},
		PayerBankID: c.PayerBankID, PayeeBankID: c.PayeeBankID, SecretVerified: c.SecretVerified,
		AuthorityRecheckRequired: c.AuthorityRecheckRequired, HasConditions: c.ConditionExprJSON != "",
		CrossChainSource: c.CrossChainSource, OnchainTimelock: c.OnchainTimelock, OnchainFinalityClass: c.OnchainFinalityClass,
		OnchainQuantumRisk: c.OnchainQuantumRisk, ConditionTemplateID: c.ConditionTemplateID, Owner: owner}
	if c.CrossChainSource != "" {
		v.OnchainMinConfirmations, v.OnchainMinWatchers = c.OnchainMinConfirmations, c.OnchainMinWatchers
	}
	return v
}

// loadHtlc reads an HTLC and its transaction on one snapshot.
func (o *Orchestrator) loadHtlc(ctx context.Context, col, v string) (c lane.HtlcContract, r txRow, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		if col == "txid" {
			c, err = lane.ReadHtlcByTx(ctx, tx, v)
		} else {
			c, err = lane.ReadHtlc(ctx, tx, v)
		}
		if err != nil {
			return err
		}
		r, err = readTx(ctx, tx, c.TxID)
		return err
	})
	return c, r, err
}

// GetHTLC reads an HTLC for one of its parties ("" : the operator, any);
// anyone else gets HTLC_NOT_FOUND, the answer for an HTLC that does not
// exist (004 照会の認可).
func (o *Orchestrator) GetHTLC(ctx context.Context, htlcID, reader string) (HtlcView, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if reader != "" && reader != c.PayerBankID && reader != c.PayeeBankID {
		return HtlcView{}, HtlcNotFound(htlcID)
	}
	return htlcView(c, string(r.State), r.ReasonCode, r.Owner), nil
}

// HtlcNotFound is the one body for an unknown htlc_id (and, at the
// gateway, for an HTLC the reader is not a party to).
func HtlcNotFound(id string) error {
	return domainerr.New("HTLC_NOT_FOUND", "HTLC not found", map[string]any{"htlc_id": id})
}

// expiredAt reports whether the outer timelock has passed at now: a
// timelock passed by one millisecond refuses every claim (001 §15.4).
func expiredAt(c lane.HtlcContract, now time.Time) bool {
	t, err := clock.ParseStamp(c.Timelock)
	return err != nil || !now.Before(t)
}

// ConditionsChecker is the ConditionChecker of coordinator/conditions: the
// HTLC's expression is decided over the attestations recorded about the
// HTLC (its id is the subject) and the ledger predicates, at one snapshot.
func ConditionsChecker(ev *conditions.Evaluator) ConditionChecker { return conditionsChecker{ev} }

type conditionsChecker struct{ ev *conditions.Evaluator }

func (c conditionsChecker) CheckHTLC(ctx context.Context, in ConditionInput) (ConditionOutcome, error) {
	d, err := c.ev.Evaluate(ctx, string(in.Expr), conditions.Inputs{Subject: in.HtlcID})
	if err != nil {
		return ConditionOutcome{}, err
	}
	quorum := map[string]any{}
	for _, r := range d.Reasons {
		if r.TemplateID != "" && r.Leaf != nil && r.Leaf.Quorum != nil {
			quorum[r.TemplateID] = r.Leaf.Quorum
		}
	}
	return ConditionOutcome{Met: d.Allowed, Equivocated: d.Equivocated, Detail: map[string]any{"satisfied": d.Satisfied, "missing": d.Missing,
		"equivocated": d.Equivocated, "quorum": quorum, "decided_at": d.EvaluatedAt, "decided_at_jst": d.EvaluatedAtJST}}, nil
}
