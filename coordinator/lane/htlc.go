package lane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// HtlcState is HtlcContracts.state (spec 001 §15.3, #HtlcState). The
// contract mirrors its transaction up to the point where the preimage is
// verified or the contract is cancelled; the money legs that follow
// (DECIDED_TO_SETTLE ... SETTLED) live on Transactions alone.
type HtlcState string

// The HTLC contract states.
const (
	HtlcReceived         HtlcState = "HTLC_RECEIVED"          // created; Transactions RECEIVED
	HtlcContractLocked   HtlcState = "HTLC_LOCKED"            // H and the payer bank's hold taken
	HtlcContractOnchain  HtlcState = "HTLC_ONCHAIN_PENDING"   // cross-chain leg, custody CHAIN:default
	HtlcContractFulfill  HtlcState = "HTLC_FULFILL_REQUESTED" // preimage verified (terminal for the contract)
	HtlcContractCanceled HtlcState = "HTLC_CANCELLED"         // timelock expired, recheck NG, lock refused (terminal)
)

// AllowedHtlcTransitions is the contract's state machine; every edge runs
// in the same batch as the Transactions edge it mirrors (SideUpdates of a
// lane primitive), so the two tables never disagree.
var AllowedHtlcTransitions = map[HtlcState][]HtlcState{
	HtlcReceived:         {HtlcContractLocked, HtlcContractCanceled},
	HtlcContractLocked:   {HtlcContractOnchain, HtlcContractFulfill, HtlcContractCanceled},
	HtlcContractOnchain:  {HtlcContractFulfill, HtlcContractCanceled},
	HtlcContractFulfill:  nil,
	HtlcContractCanceled: nil,
}

// CanTransitionHtlc reports whether from -> to is in AllowedHtlcTransitions.
func CanTransitionHtlc(from, to HtlcState) bool {
	for _, s := range AllowedHtlcTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// HtlcContract is one HtlcContracts row (spec 003): the columns the HTLC
// lane writes and reads.
type HtlcContract struct {
	HtlcID, TxID             string
	Hashlock                 string // SHA-256, lower-case hex
	Timelock                 string // RFC3339 UTC (clock.Stamp)
	Amount                   int64
	PayerBankID, PayeeBankID string
	AuthorityRecheckRequired bool
	ConditionExprJSON        string // "" = no conditions
	ConditionTemplateID      string // "" = no single template (claim-by-attestation)
	CrossChainSource         string // "" = not cross-chain
	OnchainTimelock          string
	OnchainChainClass        string
	OnchainCryptoSuite       string
	OnchainQuantumRisk       string
	OnchainFinalityClass     string
	OnchainMinConfirmations  int
	CreatedAt                string
	State                    HtlcState // "" means HTLC_RECEIVED
	Version                  int64
	SecretVerified           bool
	OnchainLockRef           string
	OnchainReleaseProofJSON  string
	OnchainMinWatchers       int
	UpdatedAt                string
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// InsertHtlc returns the side update that creates c in HTLC_RECEIVED; it
// rides on the InsertTxInTx of c's transaction, so the contract exists
// exactly when its RECEIVED row does.
func InsertHtlc(c HtlcContract) SideUpdates {
	return func(ctx context.Context, tx *store.Tx) error {
		recheck := 0
		if c.AuthorityRecheckRequired {
			recheck = 1
		}
		ok, err := store.Insert(ctx, tx, "HtlcContracts",
			[]string{"htlc_id", "txid", "state", "hashlock", "timelock", "amount_value", "payer_bank_id", "payee_bank_id",
				"authority_recheck_required", "created_at", "updated_at", "condition_expr_json", "cross_chain_source",
				"onchain_timelock", "onchain_chain_class", "onchain_crypto_suite", "onchain_quantum_risk",
				"onchain_finality_class", "onchain_min_confirmations", "onchain_min_watchers", "condition_template_id"},
			c.HtlcID, c.TxID, string(HtlcReceived), c.Hashlock, c.Timelock, c.Amount, c.PayerBankID, c.PayeeBankID,
			recheck, c.CreatedAt, c.CreatedAt, nullStr(c.ConditionExprJSON), nullStr(c.CrossChainSource),
			nullStr(c.OnchainTimelock), nullStr(c.OnchainChainClass), nullStr(c.OnchainCryptoSuite),
			nullStr(c.OnchainQuantumRisk), nullStr(c.OnchainFinalityClass), c.OnchainMinConfirmations, max(c.OnchainMinWatchers, 1),
			nullStr(c.ConditionTemplateID))
		if err != nil {
			return fmt.Errorf("lane: insert HtlcContracts %s: %w", c.HtlcID, err)
		}
		if !ok {
			return domainerr.New("INVALID_REQUEST", "an HTLC with this htlc_id or txid already exists", map[string]any{"htlc_id": c.HtlcID})
		}
		return nil
	}
}

// htlcSettable are the HtlcContracts columns an HTLC edge may set besides
// state, version and updated_at.
var htlcSettable = map[string]bool{"secret_verified": true, "onchain_lock_ref": true, "onchain_lock_proof_json": true,
	"onchain_release_proof_json": true}

// HtlcEdge returns the side update moving the contract of htlcID from
// from to to: a guarded UPDATE (WHERE state = from) that bumps version.
// A contract no longer in from makes the whole batch fail with
// CONCURRENCY_CONFLICT, so the Transactions edge it rides on rolls back
// too. set may carry the columns of htlcSettable.
func HtlcEdge(htlcID string, from, to HtlcState, now string, set map[string]any) SideUpdates {
	return func(ctx context.Context, tx *store.Tx) error {
		if !CanTransitionHtlc(from, to) {
			return domainerr.New("INVARIANT_VIOLATION", "impossible HTLC contract transition",
				map[string]any{"htlc_id": htlcID, "from": string(from), "to": string(to)})
		}
		sets := []string{"state = ?", "version = version + 1", "updated_at = ?"}
		args := []any{string(to), now}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !htlcSettable[k] {
				return domainerr.New("INVALID_REQUEST", "column not settable on an HTLC edge", map[string]any{"column": k})
			}
			sets = append(sets, k+" = ?")
			args = append(args, set[k])
		}
		args = append(args, htlcID, string(from))
		res, err := tx.ExecContext(ctx, `UPDATE HtlcContracts SET `+strings.Join(sets, ", ")+` WHERE htlc_id = ? AND state = ?`, args...)
		if err != nil {
			return fmt.Errorf("lane: HTLC edge %s %s -> %s: %w", htlcID, from, to, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return domainerr.New("CONCURRENCY_CONFLICT", "HTLC contract is no longer in the expected state",
				map[string]any{"htlc_id": htlcID, "from": string(from), "to": string(to)})
		}
		return nil
	}
}

// ReadHtlc reads the contract of htlcID (HTLC_NOT_FOUND when absent).
func ReadHtlc(ctx context.Context, tx *store.Tx, htlcID string) (HtlcContract, error) {
	return readHtlc(ctx, tx, "htlc_id", htlcID)
}

// ReadHtlcByTx reads the contract of transaction txid.
func ReadHtlcByTx(ctx context.Context, tx *store.Tx, txid string) (HtlcContract, error) {
	return readHtlc(ctx, tx, "txid", txid)
}

func readHtlc(ctx context.Context, tx *store.Tx, col, v string) (HtlcContract, error) {
	var c HtlcContract
	var state string
	var verified, recheck int
	err := tx.QueryRowContext(ctx, `SELECT htlc_id, txid, state, hashlock, timelock, amount_value, payer_bank_id, payee_bank_id,
		secret_verified, authority_recheck_required, version, created_at, updated_at, COALESCE(condition_expr_json, ''),
		COALESCE(cross_chain_source, ''), COALESCE(onchain_timelock, ''), COALESCE(onchain_chain_class, ''),
		COALESCE(onchain_crypto_suite, ''), COALESCE(onchain_quantum_risk, ''), COALESCE(onchain_finality_class, ''),
		onchain_min_confirmations, onchain_min_watchers, COALESCE(onchain_lock_ref, ''), COALESCE(onchain_release_proof_json, ''),
		COALESCE(condition_template_id, '')
		FROM HtlcContracts WHERE `+col+` = ?`, v).Scan(&c.HtlcID, &c.TxID, &state, &c.Hashlock, &c.Timelock, &c.Amount,
		&c.PayerBankID, &c.PayeeBankID, &verified, &recheck, &c.Version, &c.CreatedAt, &c.UpdatedAt, &c.ConditionExprJSON,
		&c.CrossChainSource, &c.OnchainTimelock, &c.OnchainChainClass, &c.OnchainCryptoSuite, &c.OnchainQuantumRisk,
		&c.OnchainFinalityClass, &c.OnchainMinConfirmations, &c.OnchainMinWatchers, &c.OnchainLockRef, &c.OnchainReleaseProofJSON,
		&c.ConditionTemplateID)
	if errors.Is(err, sql.ErrNoRows) {
		return c, domainerr.New("HTLC_NOT_FOUND", "HTLC not found", map[string]any{col: v})
	}
	if err != nil {
		return c, fmt.Errorf("lane: read HtlcContracts %s: %w", v, err)
	}
	c.State, c.SecretVerified, c.AuthorityRecheckRequired = HtlcState(state), verified == 1, recheck == 1
	return c, nil
}
