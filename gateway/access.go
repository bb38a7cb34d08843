package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Query authorization headers (spec 004 照会の認可).
const (
	HeaderPurposeCode = "X-Purpose-Code"
	HeaderBankID      = "X-Bank-Id"
)

// Access decisions and subject types (spec 003 AccessAuditLog).
const (
	Permit = "PERMIT"
	Deny   = "DENY"

	SubjectOperator     = "OPERATOR"
	SubjectParticipant  = "PARTICIPANT"
	SubjectUnidentified = "UNIDENTIFIED"
)

// AccessRecord is one AccessAuditLog row.
type AccessRecord struct {
	SubjectType string
	SubjectID   string
	PurposeCode string
	Resource    string
	Decision    string
	ReasonCode  string
}

// AuditWriter records access decisions.
type AuditWriter interface {
	Record(ctx context.Context, rec AccessRecord) error
}

// DBAudit writes AccessAuditLog rows (INSERT only).
type DBAudit struct {
	DB    *store.DB
	Clock clock.Clock
}

// Record inserts one row.
func (a DBAudit) Record(ctx context.Context, rec AccessRecord) error {
	clk := a.Clock
	if clk == nil {
		clk = clock.System{}
	}
	return a.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AccessAuditLog (access_id, occurred_at, subject_type, subject_id, purpose_code, resource, decision, reason_code)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, "ACC-"+uuid.New(), clock.Stamp(clk.Now()), rec.SubjectType, nullable(rec.SubjectID),
			nullable(rec.PurposeCode), rec.Resource, rec.Decision, nullable(rec.ReasonCode))
		return err
	})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// record writes an audit row; a failure is logged and never fails the
// query (spec 004: availability requirement A-2).
func (s *Server) record(r *http.Request, rec AccessRecord) {
	if err := s.audit.Record(context.WithoutCancel(r.Context()), rec); err != nil {
		s.metrics.auditFailures.Add(1)
		loggerFrom(r).ErrorContext(r.Context(), "access.audit_write_failed", "error", err, "resource", rec.Resource, "decision", rec.Decision)
	}
}

// routeKind says how a query route is authorized.
type routeKind int

const (
	txRoute       routeKind = iota // one transfer (and its derived views): parties only
	listRoute                      // lists and feeds: operator only (participant: 403 CROSS_PARTICIPANT_SCOPE)
	operatorRoute                  // operator-scope reads of one resource
)

// subject is who is asking, once authorized.
type subject struct {
	Type          string // OPERATOR | PARTICIPANT
	BankID        string
	Purpose       string
	Authenticated bool   // participant proved its identity with a registered key
	Credential    string // operator: which credential (credentialOf), never the secret
}

func (sub subject) auditID() string {
	if sub.Type == SubjectOperator {
		return sub.Credential
	}
	if sub.Type != SubjectParticipant {
		return ""
	}
	if !sub.Authenticated {
		return sub.BankID + " (unauthenticated)"
	}
	return sub.BankID
}

// notFoundTx is the one body for "no such transaction" and "not yours":
// a non-party must not learn that the transaction exists (spec 004).
func notFoundTx(txid string) error {
	return domainerr.New("TX_NOT_FOUND", "transaction not found", map[string]any{"txid": txid})
}

type queryFunc func(w http.ResponseWriter, r *http.Request, sub subject, v *orchestrator.View)

// query authorizes a query route (spec 004 照会の認可) and records the
// decision in AccessAuditLog. A list or feed (listRoute) is the
// operator's only: a participant gets 403 CROSS_PARTICIPANT_SCOPE; an
// operatorRoute likewise. One transfer (txRoute) is a partyQuery over
// txResource.
func (s *Server) query(kind routeKind, next queryFunc) http.HandlerFunc {
	if kind == txRoute {
		return partyQuery(s, s.txResource(), func(w http.ResponseWriter, r *http.Request, sub subject, v orchestrator.View) {
			next(w, r, sub, &v)
		})
	}
	return func(w http.ResponseWriter, r *http.Request) {
		sub, ok := s.authorize(w, r)
		if !ok {
			return
		}
		if sub.Type != SubjectOperator {
			s.deny(w, r, sub, domainerr.New("CROSS_PARTICIPANT_SCOPE", "a participant may query only its own transactions by id", nil))
			return
		}
		s.permit(r, sub)
		next(w, r, sub, nil)
	}
}

// partyResource is one resource a participant may read only as one of
// its parties (spec 004 当事者の定義: a transfer's payer and payee banks,
// every leg's bank of a GTID, an HTLC's payer and payee, ...); the
// operator reads every one.
type partyResource[T any] struct {
	param string // the path value naming it
	// check refuses an id no resource can have, before any lookup (nil:
	// none).
	check func(id string) error
	// notFound is the one body for "no such resource" and "not yours": a
	// non-party must not learn that it exists.
	notFound func(id string) error
	// load reads the resource unrestricted; a missing one is an error
	// with notFound's code.
	load    func(ctx context.Context, id string) (T, error)
	parties func(v T) []string
}

// partyQuery is the one owner of the authorization of a participant's
// query of one resource (spec 004 照会の認可): authorize (purpose code
// before anything is looked up, the subject, the participant's
// signature), then the id check, the lookup and the party check; a
// missing resource and a non-party get the same 404 body. Every decision
// is an AccessAuditLog row (a non-party's with NOT_A_PARTY).
func partyQuery[T any](s *Server, res partyResource[T], next func(w http.ResponseWriter, r *http.Request, sub subject, v T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sub, ok := s.authorize(w, r)
		if !ok {
			return
		}
		id := r.PathValue(res.param)
		if res.check != nil {
			if err := res.check(id); err != nil {
				s.deny(w, r, sub, err) // no resource can have it: refused before any lookup
				return
			}
		}
		notFound := res.notFound(id)
		v, err := res.load(r.Context(), id)
		if err != nil && domainerr.Code(err) == domainerr.Code(notFound) {
			s.deny(w, r, sub, notFound)
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		if sub.Type == SubjectParticipant && !slices.Contains(res.parties(v), sub.BankID) {
			s.record(r, AccessRecord{SubjectType: sub.Type, SubjectID: sub.auditID(), PurposeCode: sub.Purpose, Resource: auditResource(r),
				Decision: Deny, ReasonCode: "NOT_A_PARTY"})
			writeError(w, r, notFound)
			return
		}
		s.permit(r, sub)
		next(w, r, sub, v)
	}
}

// txResource is one transfer: its payer and payee banks are its parties.
func (s *Server) txResource() partyResource[orchestrator.View] {
	return partyResource[orchestrator.View]{param: "txid",
		check:    func(id string) error { return ident.Check(ident.TxID, "txid", id) },
		notFound: notFoundTx,
		load:     s.cfg.Coordinator.Query,
		parties:  func(v orchestrator.View) []string { return []string{v.PayerBankID, v.PayeeBankID} }}
}

// authorize is the first half of every query: the purpose code first
// (before anything is looked up), then the subject (operator wins when
// both scopes are claimed) and the participant's signature when it has an
// ACTIVE key. A refusal is answered and recorded here (ok false).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (sub subject, ok bool) {
	p := principalFrom(r)
	sub.Purpose = r.Header.Get(HeaderPurposeCode)
	switch p.Scope {
	case signing.ScopeOperator:
		sub.Type, sub.Credential = SubjectOperator, credentialOf(r, p)
	case signing.ScopeParticipant:
		sub.Type, sub.BankID = SubjectParticipant, p.BankID
	}
	if !validPurpose(sub.Purpose) {
		s.deny(w, r, sub, domainerr.New("PURPOSE_CODE_REQUIRED", "X-Purpose-Code (P01..P07) is required", map[string]any{"purpose_code": sub.Purpose}))
		return sub, false
	}
	if sub.Type == SubjectParticipant {
		if claimed := r.Header.Get(HeaderBankID); sub.BankID == "" || (claimed != "" && claimed != sub.BankID) {
			s.denyAs(w, r, sub, SubjectUnidentified, domainerr.New("REQUESTER_UNIDENTIFIED", "the requesting participant cannot be identified", nil))
			return sub, false
		}
		if err := s.checkParticipantSignature(r, &sub); err != nil {
			s.deny(w, r, sub, err)
			return sub, false
		}
	} else if sub.Type == "" {
		s.deny(w, r, sub, domainerr.New("REQUESTER_UNIDENTIFIED", "the requesting subject cannot be identified", nil))
		return sub, false
	}
	return sub, true
}

// deny records a refused query (subject UNIDENTIFIED when sub has no
// type; the purpose code only when it is a valid one) and answers err.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, sub subject, err error) {
	s.denyAs(w, r, sub, sub.Type, err)
}

// denyAs is deny recording subjectType (a participant whose claim does
// not hold is recorded UNIDENTIFIED, with the id it claimed).
func (s *Server) denyAs(w http.ResponseWriter, r *http.Request, sub subject, subjectType string, err error) {
	if subjectType == "" {
		subjectType = SubjectUnidentified
	}
	s.record(r, AccessRecord{SubjectType: subjectType, SubjectID: sub.auditID(), PurposeCode: nullPurpose(sub.Purpose),
		Resource: auditResource(r), Decision: Deny, ReasonCode: domainerr.Code(err)})
	writeError(w, r, err)
}

// permit records an allowed query.
func (s *Server) permit(r *http.Request, sub subject) {
	s.record(r, AccessRecord{SubjectType: sub.Type, SubjectID: sub.auditID(), PurposeCode: sub.Purpose, Resource: auditResource(r), Decision: Permit})
}

// MaxAuditResource bounds the resource (request path) stored in an
// AccessAuditLog row or a violation sample; a longer one is cut with a
// "...[+N bytes]" marker (ident.Truncate).
const MaxAuditResource = 256

// auditResource is the stored resource of a request: its path without
// the /api/ prefix, bounded by MaxAuditResource.
func auditResource(r *http.Request) string {
	resource := r.URL.Path
	if len(resource) > 5 && resource[:5] == "/api/" {
		resource = resource[5:]
	}
	return ident.Truncate(resource, MaxAuditResource)
}

// Operator credential kinds as AccessAuditLog.subject_id names them:
// "api-key:<configured name>", "cron-secret", "unauthenticated-ui".
const (
	credentialAPIKey = "api-key"
	credentialCron   = "cron-secret"
	credentialUI     = "unauthenticated-ui"
)

// credentialOf names the credential an authenticated request used, in the
// order the perimeter tries them: X-Cron-Secret, then an API key (named
// by its configured name), else the unauthenticated UI.
func credentialOf(r *http.Request, p signing.Principal) string {
	switch {
	case r.Header.Get(HeaderCronSecret) != "":
		return credentialCron
	case signing.Presented(r.Header) != "":
		name := p.Name
		if name == "" {
			name = "(unnamed)"
		}
		return credentialAPIKey + ":" + ident.Truncate(name, 64)
	}
	return credentialUI
}

// recordRefusedCredential writes the AccessAuditLog row of a read (GET)
// refused at the perimeter because the credential it presented (kind:
// credentialAPIKey or credentialCron) is not valid. The subject is
// UNIDENTIFIED and the row names only the kind, never the secret.
func (s *Server) recordRefusedCredential(r *http.Request, kind string) {
	if r.Method != http.MethodGet {
		return
	}
	s.record(r, AccessRecord{SubjectType: SubjectUnidentified, SubjectID: "credential:" + kind,
		PurposeCode: nullPurpose(r.Header.Get(HeaderPurposeCode)), Resource: auditResource(r), Decision: Deny, ReasonCode: "UNAUTHORIZED"})
}

func nullPurpose(p string) string {
	if validPurpose(p) {
		return p
	}
	return ""
}

// checkParticipantSignature enforces the participant signature when the
// bank has an ACTIVE PARTICIPANT key (the registry decides, not the
// caller); a signature sent by a bank without a key is verified too.
func (s *Server) checkParticipantSignature(r *http.Request, sub *subject) error {
	if s.cfg.Queries == nil || s.cfg.Queries.Registry == nil {
		return nil
	}
	must, err := s.cfg.Queries.Registry.HasActiveKey(r.Context(), signing.OwnerParticipant, sub.BankID)
	if err != nil {
		return err
	}
	signed := r.Header.Get(signing.HeaderParticipantSignature) != "" || r.Header.Get(signing.HeaderParticipantKeyID) != ""
	if !signed {
		if must {
			return domainerr.New("PARTICIPANT_SIGNATURE_REQUIRED", "participant "+sub.BankID+" has a registered key and must sign its queries",
				map[string]any{"bank_id": sub.BankID})
		}
		return nil
	}
	if err := s.cfg.Queries.VerifyQuery(r.Context(), r.Header, r.Method, r.URL.Path, sub.BankID, sub.Purpose); err != nil {
		loggerFrom(r).WarnContext(r.Context(), "access.violation_detected", "bank_id", sub.BankID, "path", auditResource(r),
			"cause", domainerr.Code(err))
		s.recordViolation(r, sub.BankID, domainerr.Code(err))
		details := map[string]any{"bank_id": sub.BankID, "cause": domainerr.Code(err)}
		if de, ok := domainerr.As(err); ok && de.Code == "INVALID_REQUEST" { // a key id or nonce header outside coordinator/ident
			details["field"] = de.Details["field"]
		}
		return domainerr.Wrap("PARTICIPANT_SIGNATURE_INVALID", err, "participant signature is not valid", details)
	}
	sub.Authenticated = true
	return nil
}

// ViolationWindow is the aggregation window of participant signature
// violations: the first violation of a participant in a window appends
// one DataAccessViolationDetected entry to the GLOBAL chain; the others
// only count in that window's AccessViolationWindows row (with the last
// sample). Each refused request also keeps its own AccessAuditLog row.
const ViolationWindow = 5 * time.Minute

// recordViolation records an invalid participant signature against a
// registered key, the shape of impersonation (spec 004), in one write
// transaction: a guarded insert of the (bank, window) row; when it is new,
// the GLOBAL-chain entry with the first sample; otherwise a guarded
// increment of the count and the last sample. A failure is logged; the
// request is refused either way.
func (s *Server) recordViolation(r *http.Request, bankID, cause string) {
	ctx := context.WithoutCancel(r.Context())
	now := s.clk.Now().UTC()
	window := clock.Stamp(now.Truncate(ViolationWindow))
	at := clock.Stamp(now)
	sample := map[string]any{"key_id": ident.Truncate(r.Header.Get(signing.HeaderParticipantKeyID), 64),
		"path": auditResource(r), "method": ident.Truncate(r.Method, 16), "cause": cause, "request_id": requestID(r)}
	sampleJSON, _ := json.Marshal(sample)
	err := s.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		first, err := store.Insert(ctx, tx, "AccessViolationWindows",
			[]string{"bank_id", "window_start", "violations", "first_at", "first_sample", "last_at", "last_sample"},
			bankID, window, 1, at, string(sampleJSON), at, string(sampleJSON))
		if err != nil {
			return err
		}
		if !first {
			_, err := store.Applied(tx.ExecContext(ctx, `UPDATE AccessViolationWindows SET violations = violations + 1, last_at = ?, last_sample = ?
				WHERE bank_id = ? AND window_start = ?`, at, string(sampleJSON), bankID, window))
			return err
		}
		payload := map[string]any{"bank_id": bankID, "window_start": window, "window_sec": int64(ViolationWindow / time.Second),
			"aggregated_in": "AccessViolationWindows"}
		for k, v := range sample {
			payload[k] = v
		}
		entry, err := s.cfg.FinalityLog.Append(ctx, tx, finality.Event{Type: finality.DataAccessViolationDetected, StateTo: "DETECTED", Payload: payload})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE AccessViolationWindows SET log_id = ? WHERE bank_id = ? AND window_start = ?`, entry.LogID, bankID, window)
		return err
	})
	if err != nil {
		loggerFrom(r).ErrorContext(ctx, "access.violation_record_failed", "error", err)
	}
}
