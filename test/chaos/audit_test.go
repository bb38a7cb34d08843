package chaos_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// The auditor's checks, by name (docs/chaos.md explains each).
const (
	chkAccepted    = "accepted-recorded"    // every 2xx names a Transactions row of that request (payer, payee, amount, key)
	chkAnswers     = "answers-identical"    // every 2xx answer to one key is byte-identical
	chkRefused     = "refused-not-recorded" // a request refused at the API left no row; a valid request was never refused there
	chkUnanswered  = "answered"             // every request got a definitive answer
	chkUnknownRow  = "no-unrequested-row"   // every Transactions row is an accepted request of the run
	chkTerminal    = "terminal-as-expected" // each accepted transfer ended as its kind must (SETTLED, or CANCELLED/INSUFFICIENT_FUNDS)
	chkCrashCase   = "no-crash-case"        // every Case has a real refusal as its cause
	chkDebitCredit = "debit-credit-paired"  // no payer debited at its core without the payee credited or the payer refunded
	chkExactlyOnce = "posting-exactly-once" // each posting ref is journalled once at its core, and is APPLIED in its outbox
	chkOutbox      = "outbox-final"         // no posting left PENDING/CLAIMED/IN_DOUBT/BLOCKED
	chkAccount     = "account-moved-as-settled"
	chkConserved   = "money-conserved" // cores sum to their openings; each bank zero-sum with its positions; each venue sums to its openings
	chkShadow      = "shadow-matches-core"
	chkReleased    = "funds-released" // no adapter hold, no H reservation, no H in use left
	chkChains      = "chains-verify"  // finality.VerifyAll on zc.db
	chkReplay      = "replay-byte-identical"
)

// realRefusals are the reasons a transfer or a Case may carry because a
// bank really refused it; anything else on a Case is caused by the crash.
var realRefusals = map[string]bool{"INSUFFICIENT_FUNDS": true, "NAME_MISMATCH": true, "ACCOUNT_NOT_FOUND": true,
	"ACCOUNT_FROZEN": true, "AUTHORITY_CHECK_NG": true}

type findings struct {
	seed uint64
	by   map[string][]string
	ran  []string
}

func (f *findings) add(check, format string, args ...any) {
	f.by[check] = append(f.by[check], fmt.Sprintf(format, args...))
}

func (f *findings) report(t *testing.T) {
	t.Helper()
	var ok []string
	for _, c := range f.ran {
		list := f.by[c]
		if len(list) == 0 {
			ok = append(ok, c)
			continue
		}
		shown := list
		if len(shown) > 12 {
			shown = shown[:12]
		}
		t.Errorf("check %s (seed %d): %d findings:\n    %s%s", c, f.seed, len(list), strings.Join(shown, "\n    "),
			map[bool]string{true: fmt.Sprintf("\n    … and %d more", len(list)-len(shown)), false: ""}[len(list) > len(shown)])
	}
	t.Logf("checks passed: %s", strings.Join(ok, ", "))
}

type txRow struct {
	TxID, Lane, State, Reason, CaseID, Key     string
	PayerBank, PayerHash, PayeeBank, PayeeHash string
	Amount                                     int64
}

type journalLine struct {
	Bank, Ref, TxID, Account, Kind string
	Delta                          int64
}

type outboxRow struct {
	Bank, Ref, TxID, Account, Kind, Status, Reason string
	Amount                                         int64
}

// audit reads the stopped node's files and checks what a bank auditor
// would. quiet says whether the node reached quiescence: when it did not,
// the balance checks still run and their findings say so.
func audit(ctx context.Context, t *testing.T, r *runResult) *findings {
	t.Helper()
	fs, w, all, seed, quiet := r.fs, r.w, r.all, r.seed, r.quiet
	f := &findings{seed: seed, by: map[string][]string{}, ran: []string{chkAccepted, chkAnswers, chkRefused, chkUnanswered, chkUnknownRow,
		chkTerminal, chkCrashCase, chkDebitCredit, chkExactlyOnce, chkOutbox, chkAccount, chkConserved, chkShadow, chkReleased, chkChains, chkReplay}}
	note := ""
	if !quiet {
		note = " (the node was not quiescent)"
	}
	must := func(err error) {
		if err != nil {
			t.Fatalf("audit (seed %d): %v", seed, err)
		}
	}

	// Coordinator rows.
	txs := map[string]*txRow{}
	byKey := map[string]*txRow{}
	must(each(ctx, fs.zc, `SELECT txid, lane, state, COALESCE(reason_code,''), COALESCE(case_id,''), idempotency_key,
		payer_bank_id, payer_account_hash, payee_bank_id, COALESCE(payee_account_hash,''), amount_value FROM Transactions`, func(r *sql.Rows) error {
		var x txRow
		err := r.Scan(&x.TxID, &x.Lane, &x.State, &x.Reason, &x.CaseID, &x.Key, &x.PayerBank, &x.PayerHash, &x.PayeeBank, &x.PayeeHash, &x.Amount)
		txs[x.TxID], byKey[x.Key] = &x, &x
		return err
	}))
	items := map[string]string{}
	must(each(ctx, fs.zc, `SELECT txid, kind || ' ' || status || COALESCE(' last_error=' || last_error_code, '') || COALESCE(' case=' || case_id, '')
		FROM OrchestratorQueue`, func(r *sql.Rows) error {
		var id, d string
		err := r.Scan(&id, &d)
		items[id] += "[" + d + "]"
		return err
	}))

	// Requests and answers.
	expect := map[string]*sent{} // txid → request
	for _, s := range all {
		a := s.accepted()
		s.mu.Lock()
		answers := append([]answer(nil), s.Answers...)
		transErrs, lastErr := s.TransErrs, s.LastErr
		s.mu.Unlock()
		rowKey := "PI:" + s.Payer.Bank + ":" + s.Key
		if !s.definitive() {
			f.add(chkUnanswered, "key %s (%s): no definitive answer after %d attempts without one (last: %s; answers %s)", s.Key, s.Kind,
				transErrs+len(answers), lastErr, statuses(answers))
		}
		if a == nil {
			if s.Kind != kindInvalid && s.definitive() {
				f.add(chkRefused, "key %s (%s, a valid request) refused at the API: %s", s.Key, s.Kind, lastBody(answers))
			}
			if x := byKey[rowKey]; x != nil {
				f.add(chkRefused, "key %s (%s) was never accepted (answers %s) but Transactions has %s in %s", s.Key, s.Kind, statuses(answers), x.TxID, x.State)
			}
			continue
		}
		if s.Kind == kindInvalid {
			f.add(chkRefused, "key %s (amount 0) was accepted: %s", s.Key, a.Body)
		}
		fresh := 0
		for _, o := range answers {
			if o.Status/100 == 2 && string(o.Body) != string(a.Body) {
				f.add(chkAnswers, "key %s: 2xx answers differ: %s vs %s", s.Key, a.Body, o.Body)
			}
			if o.Status/100 == 2 && !o.Replayed {
				fresh++
			}
		}
		if fresh > 1 {
			f.add(chkAnswers, "key %s: accepted %d times as new (2xx without Idempotent-Replayed)", s.Key, fresh)
		}
		var res orchestrator.SubmitResult
		if err := json.Unmarshal(a.Body, &res); err != nil || res.TxID == "" {
			f.add(chkAccepted, "key %s: 2xx body names no txid: %s", s.Key, a.Body)
			continue
		}
		x := txs[res.TxID]
		switch {
		case x == nil:
			f.add(chkAccepted, "key %s: accepted as %s, but Transactions has no such row", s.Key, res.TxID)
			continue
		case x.Key != rowKey || x.PayerBank != s.Payer.Bank || x.PayerHash != s.Payer.Hash || x.PayeeBank != s.Payee.Bank || x.Amount != s.Amount:
			f.add(chkAccepted, "key %s: row %s is %s %s/%s -> %s/%s %d, the request was %s/%s -> %s/%s %d", s.Key, x.TxID, x.Key,
				x.PayerBank, x.PayerHash, x.PayeeBank, x.PayeeHash, x.Amount, s.Payer.Bank, s.Payer.Hash, s.Payee.Bank, s.Payee.Hash, s.Amount)
		}
		expect[x.TxID] = s
		wantState, wantReason := "SETTLED", ""
		if s.Kind == kindPoor {
			wantState, wantReason = "CANCELLED", "INSUFFICIENT_FUNDS"
		}
		if x.State != wantState || x.Reason != wantReason || (wantState == "SETTLED" && x.PayeeHash != s.Payee.Hash) {
			f.add(chkTerminal, "%s (key %s, %s %s/%s -> %s/%s %d): %s reason %q case %q payee %s, want %s %q%s; work items %s", x.TxID, s.Key, s.Kind,
				s.Payer.Bank, s.Payer.Hash, s.Payee.Bank, s.Payee.Hash, s.Amount, x.State, x.Reason, x.CaseID, x.PayeeHash, wantState, wantReason,
				terminalNote(x.State), items[x.TxID])
		}
	}
	for id, x := range txs {
		if expect[id] == nil {
			f.add(chkUnknownRow, "%s (key %s, %s) is not the answer to any accepted request", id, x.Key, x.State)
		}
	}

	// Cases.
	must(each(ctx, fs.zc, `SELECT case_id, COALESCE(related_txid,''), reason_code, COALESCE(description,''), COALESCE(cause_key,''), opened_by, state FROM Cases`,
		func(r *sql.Rows) error {
			var id, tx, reason, desc, cause, by, st string
			if err := r.Scan(&id, &tx, &reason, &desc, &cause, &by, &st); err != nil {
				return err
			}
			if !realRefusals[reason] {
				f.add(chkCrashCase, "case %s (%s, opened by %s, cause %s) on %s: %s %q", id, st, by, cause, tx, reason, desc)
			}
			return nil
		}))

	// Cores and outboxes.
	var lines []journalLine
	balances := map[string]int64{} // bank/core account → balance
	outboxes := map[string]outboxRow{}
	for _, b := range bankIDs {
		// The account openings are journalled too (source OPENING): they
		// are no posting of a transfer.
		must(each(ctx, fs.core[b], `SELECT ref, txid, account, kind, delta FROM CoreJournal WHERE source != ? ORDER BY journal_id`, func(r *sql.Rows) error {
			l := journalLine{Bank: b}
			err := r.Scan(&l.Ref, &l.TxID, &l.Account, &l.Kind, &l.Delta)
			lines = append(lines, l)
			return err
		}, coresim.SourceSeed))
		must(each(ctx, fs.core[b], `SELECT account, balance FROM CoreAccounts`, func(r *sql.Rows) error {
			var a string
			var v int64
			err := r.Scan(&a, &v)
			balances[b+"/"+a] = v
			return err
		}))
		must(each(ctx, fs.adapter[b], `SELECT ref, txid, account, kind, amount, status, COALESCE(reason_code,'') FROM AdapterOutbox`, func(r *sql.Rows) error {
			o := outboxRow{Bank: b}
			err := r.Scan(&o.Ref, &o.TxID, &o.Account, &o.Kind, &o.Amount, &o.Status, &o.Reason)
			outboxes[b+"/"+o.Ref] = o
			if o.Status != "APPLIED" {
				f.add(chkOutbox, "bank %s posting %s (%s %s %d of %s) is %s %s%s", b, o.Ref, o.Kind, o.Account, o.Amount, o.TxID, o.Status, o.Reason, note)
			}
			return err
		}))
		var held int
		must(fs.adapter[b].Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT count(*) FROM AdapterHolds WHERE status = 'HELD'`).Scan(&held)
		}))
		if held > 0 {
			f.add(chkReleased, "bank %s: %d adapter holds still HELD%s", b, held, note)
		}
		// The shadow ledger: opening + adjustment + APPLIED postings.
		must(each(ctx, fs.adapter[b], `SELECT a.account_hash, a.core_account, a.opening_balance + a.adjustment +
			COALESCE((SELECT SUM(p.direction * p.amount) FROM AdapterPostings p JOIN AdapterOutbox o ON o.ref = p.ref
				WHERE p.account_hash = a.account_hash AND o.status = 'APPLIED'), 0) FROM AdapterAccounts a`, func(r *sql.Rows) error {
			var hash, core string
			var shadow int64
			if err := r.Scan(&hash, &core, &shadow); err != nil {
				return err
			}
			if bal, ok := balances[b+"/"+core]; !ok || bal != shadow {
				f.add(chkShadow, "bank %s account %s (%s): shadow %d, core %d%s", b, hash, core, shadow, bal, note)
			}
			return nil
		}))
	}

	// Each posting exactly once.
	perRef := map[string]int{}
	for _, l := range lines {
		perRef[l.Bank+"/"+l.Ref]++
	}
	for ref, n := range perRef {
		o, ok := outboxes[ref]
		switch {
		case n > 1:
			f.add(chkExactlyOnce, "posting %s applied %d times at its core (txid %s)", ref, n, o.TxID)
		case !ok:
			f.add(chkExactlyOnce, "core journal line %s has no posting in its adapter's outbox", ref)
		case o.Status != "APPLIED":
			f.add(chkExactlyOnce, "posting %s is journalled at the core but %s in the outbox%s", ref, o.Status, note)
		}
	}
	for ref, o := range outboxes {
		if o.Status == "APPLIED" && perRef[ref] == 0 {
			f.add(chkExactlyOnce, "posting %s (%s %d of %s) is APPLIED in the outbox but not in its core's journal", ref, o.Kind, o.Amount, o.TxID)
		}
	}

	// Debits paired with a credit or a refund, per transfer.
	type moves struct{ debit, credit, reversal int64 }
	per := map[string]*moves{}
	for _, l := range lines {
		m := per[l.TxID]
		if m == nil {
			m = &moves{}
			per[l.TxID] = m
		}
		switch l.Kind {
		case "DEBIT":
			m.debit += -l.Delta
		case "CREDIT":
			m.credit += l.Delta
		default:
			m.reversal += l.Delta
		}
	}
	for id, m := range per {
		x, s := txs[id], expect[id]
		if x == nil || s == nil {
			f.add(chkDebitCredit, "core postings for %s, which is no accepted transfer (debit %d credit %d reversal %d)", id, m.debit, m.credit, m.reversal)
			continue
		}
		if m.debit > 0 && m.credit == 0 && m.reversal == 0 {
			f.add(chkDebitCredit, "%s (key %s, %s, %d): payer %s/%s debited %d at its core, payee never credited and payer not refunded; transfer %s %s%s",
				id, s.Key, s.Kind, s.Amount, s.Payer.Bank, s.Payer.Core, m.debit, x.State, x.Reason, note)
		}
		if x.State == "SETTLED" && (m.debit != s.Amount || m.credit != s.Amount || m.reversal != 0) {
			f.add(chkDebitCredit, "%s (key %s) SETTLED %d but its cores moved debit %d credit %d reversal %d%s", id, s.Key, s.Amount, m.debit, m.credit, m.reversal, note)
		}
	}

	// Balances: each account as its settled transfers say; conservation.
	want := map[string]int64{}
	var opening int64
	for _, a := range w.accounts {
		want[a.key()] = a.Opening
		opening += a.Opening
	}
	for id, s := range expect {
		if txs[id].State == "SETTLED" {
			want[s.Payer.key()] -= s.Amount
			want[s.Payee.key()] += s.Amount
		}
	}
	var total int64
	bankMoved := map[string]int64{}
	for _, a := range w.accounts {
		bal, ok := balances[a.key()]
		if !ok {
			f.add(chkAccount, "account %s is missing at its core", a.key())
			continue
		}
		if bal != want[a.key()] {
			f.add(chkAccount, "account %s (%s): core balance %d, opening %d plus its SETTLED transfers say %d (off by %d)%s",
				a.key(), a.Hash, bal, a.Opening, want[a.key()], bal-want[a.key()], note)
		}
		total += bal
		bankMoved[a.Bank] += bal - a.Opening
	}
	if total != opening {
		f.add(chkConserved, "the cores hold %d in total, the openings were %d (off by %d)%s", total, opening, total-opening, note)
	}
	posMoved, venue := map[string]int64{}, map[string]int64{}
	must(each(ctx, fs.zc, `SELECT bank_id, venue, balance FROM SettlementPositions`, func(r *sql.Rows) error {
		var b, v string
		var bal int64
		if err := r.Scan(&b, &v, &bal); err != nil {
			return err
		}
		if v == orchestrator.VenueBOJ {
			bal -= bojOpening
		}
		posMoved[b] += bal
		venue[v] += bal
		return nil
	}))
	for _, b := range bankIDs {
		if bankMoved[b] != posMoved[b] {
			f.add(chkConserved, "bank %s: its customers moved %d at its core, its settlement positions (ZC + BOJ) moved %d%s", b, bankMoved[b], posMoved[b], note)
		}
	}
	for v, d := range venue {
		if d != 0 {
			f.add(chkConserved, "venue %s: positions moved %d in total, want 0", v, d)
		}
	}
	must(each(ctx, fs.zc, `SELECT bank_id, h_used FROM Participants WHERE h_used != 0`, func(r *sql.Rows) error {
		var b string
		var used int64
		err := r.Scan(&b, &used)
		f.add(chkReleased, "bank %s has %d of H in use%s", b, used, note)
		return err
	}))
	must(each(ctx, fs.zc, `SELECT reservation_id, txid, amount FROM HReservations WHERE is_released = 0`, func(r *sql.Rows) error {
		var id, tx string
		var amt int64
		err := r.Scan(&id, &tx, &amt)
		f.add(chkReleased, "H reservation %s of %s (%d) not released; transfer %s%s", id, tx, amt, stateOf(txs, tx), note)
		return err
	}))

	// Every FinalityLog chain.
	rep, err := finality.VerifyAll(ctx, fs.zc)
	must(err)
	for _, b := range rep.Breaks {
		f.add(chkChains, "chain break: %+v", b)
	}
	t.Logf("audit: %d transfers, %d journal lines at the cores, %d postings, %d chains / %d FinalityLog entries verified",
		len(txs), len(lines), len(outboxes), rep.Chains, rep.Entries)
	for _, p := range r.replays {
		f.add(chkReplay, "%s", p)
	}
	return f
}

func stateOf(txs map[string]*txRow, id string) string {
	if x := txs[id]; x != nil {
		return x.State
	}
	return "(no row)"
}

func terminalNote(state string) string {
	if !lane.TxState(state).Terminal() {
		return " (not terminal)"
	}
	return ""
}

func statuses(as []answer) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprint(a.Status))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

func lastBody(as []answer) string {
	if len(as) == 0 {
		return "(none)"
	}
	a := as[len(as)-1]
	return fmt.Sprintf("%d %s", a.Status, a.Body)
}
