package adapter

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// CoordinatorCases opens real Cases in the coordinator's database through
// coordinator/cases (its public API; the adapter never writes coordinator
// tables itself). It implements outbox.CaseOpener for both the outbox
// (BLOCKED postings) and reconciliation (drifts).
//
// Cases aggregate by cause ("CAUSE:{bank}:{reason_code}", one cause one
// case, or "CAUSE:{bank}:{reason_code}:{cause}" when the request names its
// cause, as a drift does): a second detection of the same cause joins the
// open case, and links its txid when it has one. Repeating an OpenCase with the
// same request therefore returns the same case, which is what the outbox
// and reconciliation need from the DedupKey after a crash.
type CoordinatorCases struct {
	DB    *store.DB // the coordinator's database
	Cases *cases.Cases
}

var _ outbox.CaseOpener = CoordinatorCases{}

// OpenCase opens (or joins) the Case and returns its id.
func (c CoordinatorCases) OpenCase(ctx context.Context, req outbox.CaseRequest) (string, error) {
	evidence := []string{req.DedupKey}
	if req.Ref != "" {
		evidence = append(evidence, req.Ref)
	}
	o, err := c.Cases.OpenCaseDB(ctx, c.DB, cases.OpenRequest{
		ReasonCode:    req.ReasonCode,
		Description:   req.Description,
		OpenedBy:      req.OpenedBy,
		RelatedTxID:   req.RelatedTxID,
		CausePartyID:  req.CausePartyID,
		DetectionPath: req.DetectionPath,
		Cause:         req.Cause,
		EvidenceRefs:  evidence,
	})
	if err != nil {
		return "", fmt.Errorf("adapter: open case %s: %w", req.DedupKey, err)
	}
	return o.CaseID, nil
}
