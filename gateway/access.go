package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
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
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, "ACC-"+uuid(), clock.Stamp(clk.Now()), rec.SubjectType, nullable(rec.SubjectID),
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

func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
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
	Authenticated bool // participant proved its identity with a registered key
}

func (sub subject) auditID() string {
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
// decision in AccessAuditLog: purpose code first (before anything is
// looked up), then the subject (operator wins when both scopes are
// claimed), the participant's signature when it has an ACTIVE key, the
// list/feed refusal for participants, and for one transfer the party check
// whose refusal is the same 404 as a missing transfer.
func (s *Server) query(kind routeKind, next queryFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r)
		resource := r.URL.Path
		if len(resource) > 5 && resource[:5] == "/api/" {
			resource = resource[5:]
		}
		purpose := r.Header.Get(HeaderPurposeCode)
		sub := subject{Purpose: purpose}
		deny := func(err error, subjType string) {
			s.record(r, AccessRecord{SubjectType: subjType, SubjectID: sub.auditID(), PurposeCode: nullPurpose(purpose),
				Resource: resource, Decision: Deny, ReasonCode: domainerr.Code(err)})
			writeError(w, r, err)
		}
		switch p.Scope {
		case signing.ScopeOperator:
			sub.Type = SubjectOperator
		case signing.ScopeParticipant:
			sub.Type, sub.BankID = SubjectParticipant, p.BankID
		}
		if !validPurpose(purpose) {
			t := sub.Type
			if t == "" {
				t = SubjectUnidentified
			}
			deny(domainerr.New("PURPOSE_CODE_REQUIRED", "X-Purpose-Code (P01..P07) is required", map[string]any{"purpose_code": purpose}), t)
			return
		}
		if sub.Type == SubjectParticipant {
			if claimed := r.Header.Get(HeaderBankID); sub.BankID == "" || (claimed != "" && claimed != sub.BankID) {
				deny(domainerr.New("REQUESTER_UNIDENTIFIED", "the requesting participant cannot be identified", nil), SubjectUnidentified)
				return
			}
			if err := s.checkParticipantSignature(r, &sub); err != nil {
				deny(err, SubjectParticipant)
				return
			}
		} else if sub.Type == "" {
			deny(domainerr.New("REQUESTER_UNIDENTIFIED", "the requesting subject cannot be identified", nil), SubjectUnidentified)
			return
		}
		if kind != txRoute {
			if sub.Type != SubjectOperator {
				deny(domainerr.New("CROSS_PARTICIPANT_SCOPE", "a participant may query only its own transactions by id", nil), sub.Type)
				return
			}
			s.record(r, AccessRecord{SubjectType: sub.Type, PurposeCode: purpose, Resource: resource, Decision: Permit})
			next(w, r, sub, nil)
			return
		}
		txid := r.PathValue("txid")
		v, err := s.cfg.Coordinator.Query(r.Context(), txid)
		if domainerr.Has(err, "TX_NOT_FOUND") {
			deny(notFoundTx(txid), sub.Type)
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		if sub.Type == SubjectParticipant && v.PayerBankID != sub.BankID && v.PayeeBankID != sub.BankID {
			s.record(r, AccessRecord{SubjectType: sub.Type, SubjectID: sub.auditID(), PurposeCode: purpose, Resource: resource,
				Decision: Deny, ReasonCode: "NOT_A_PARTY"})
			writeError(w, r, notFoundTx(txid))
			return
		}
		s.record(r, AccessRecord{SubjectType: sub.Type, SubjectID: sub.auditID(), PurposeCode: purpose, Resource: resource, Decision: Permit})
		next(w, r, sub, &v)
	}
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
		loggerFrom(r).WarnContext(r.Context(), "access.violation_detected", "bank_id", sub.BankID, "path", r.URL.Path,
			"cause", domainerr.Code(err))
		s.recordViolation(r, sub.BankID, domainerr.Code(err))
		return domainerr.Wrap("PARTICIPANT_SIGNATURE_INVALID", err, "participant signature is not valid",
			map[string]any{"bank_id": sub.BankID, "cause": domainerr.Code(err)})
	}
	sub.Authenticated = true
	return nil
}

// recordViolation appends DataAccessViolationDetected to the GLOBAL chain:
// an invalid signature against a registered key is the shape of
// impersonation (spec 004). A failure is logged; the request is refused
// either way.
func (s *Server) recordViolation(r *http.Request, bankID, cause string) {
	ctx := context.WithoutCancel(r.Context())
	err := s.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := s.cfg.FinalityLog.Append(ctx, tx, finality.Event{Type: finality.DataAccessViolationDetected, StateTo: "DETECTED",
			Payload: map[string]any{"bank_id": bankID, "key_id": r.Header.Get(signing.HeaderParticipantKeyID), "path": r.URL.Path,
				"method": r.Method, "cause": cause, "request_id": requestID(r)}})
		return err
	})
	if err != nil {
		loggerFrom(r).ErrorContext(ctx, "access.violation_record_failed", "error", err)
	}
}
