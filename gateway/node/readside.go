package node

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/outbox"
)

// The node's contributions to the read side: its metrics collectors, the
// core posting status of QueryResponse, and the posting reports that make
// a leg's landing at the core an event.

// collectors are the node's gauges besides the gateway's own (docs/gateway.md):
// each bank's open outbox postings by status, each core link's queue
// depths, and each job's last run, all read at scrape time; and the Kafka
// publisher's counters and lag histogram when it runs.
func (n *Node) collectors(led *ledger.Ledger) []prometheus.Collector {
	banks := n.Config.Banks
	return []prometheus.Collector{kafkaCollector{n}, gateway.NewScrapeCollector(
		gateway.ScrapeGauge{Name: "zcgw_outbox_postings", Help: "Core postings not yet applied, by bank and status (PENDING, CLAIMED, IN_DOUBT, BLOCKED).",
			Labels: []string{"bank", "status"}, Read: func(ctx context.Context) (out []gateway.Sample, err error) {
				for _, bc := range banks {
					counts, err := n.Banks[bc.BankID].Adapter.Outbox().OpenCounts(ctx)
					if err != nil {
						return nil, err
					}
					for s, c := range counts {
						out = append(out, gateway.Sample{Labels: []string{bc.BankID, string(s)}, Value: float64(c)})
					}
				}
				return out, nil
			}},
		gateway.ScrapeGauge{Name: "zcgw_mq_queue_depth", Help: "Messages on each core link's MQ queue (MQINQ CURDEPTH).",
			Labels: []string{"bank", "queue"}, Read: func(ctx context.Context) (out []gateway.Sample, err error) {
				for _, bc := range banks {
					ds, err := n.Banks[bc.BankID].Link.Depths(ctx)
					if errors.Is(err, corelink.ErrNoDepth) {
						continue
					}
					if err != nil {
						return nil, err
					}
					for _, d := range ds {
						out = append(out, gateway.Sample{Labels: []string{bc.BankID, d.Queue}, Value: float64(d.Depth)})
					}
				}
				return out, nil
			}},
		gateway.ScrapeGauge{Name: "zcgw_job_last_run", Help: "Each job's last run: 1 for its status (STARTED, COMPLETED, FAILED), 0 for the others.",
			Labels: []string{"job", "status"}, Read: func(ctx context.Context) (out []gateway.Sample, err error) {
				runs, err := led.LastRuns(ctx)
				for _, r := range runs {
					for _, s := range []ledger.Status{ledger.Started, ledger.Completed, ledger.Failed} {
						out = append(out, gateway.Sample{Labels: []string{r.Job, string(s)}, Value: b2f(r.Status == s)})
					}
				}
				return out, err
			}},
		gateway.ScrapeGauge{Name: "zcgw_job_last_run_started_seconds", Help: "Start of each job's last run (Unix seconds).",
			Labels: []string{"job"}, Read: func(ctx context.Context) (out []gateway.Sample, err error) {
				runs, err := led.LastRuns(ctx)
				for _, r := range runs {
					out = append(out, gateway.Sample{Labels: []string{r.Job}, Value: float64(r.StartedAt.Unix())})
				}
				return out, err
			}},
	)}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// corePostings is gateway.CorePostings over the banks' adapter outboxes:
// a leg's posting status is read where it is true, in its bank's outbox.
type corePostings struct{ n *Node }

func (c corePostings) Status(ctx context.Context, bankID, txid, kind string) (string, error) {
	b := c.n.Banks[bankID]
	if b == nil { // a participant this node does not host: nothing to say
		return "", nil
	}
	s, err := b.Adapter.Outbox().PostingStatus(ctx, txid, outbox.Kind(kind))
	return string(s), err
}

// postingReports is the adapters' outbox.PostingReporter: each posting's
// final status at the core becomes a CorePostingApplied/Blocked event on
// the transfer's chain (orchestrator.RecordCorePosting, idempotent per ref
// and status). A posting whose txid the coordinator does not know (an
// operator's posting outside any transfer) has no chain to land on: it is
// logged and taken as reported.
type postingReports struct{ n *Node }

func (p postingReports) ReportPosting(ctx context.Context, r outbox.PostingReport) error {
	_, err := p.n.Orchestrator.RecordCorePosting(ctx, corePosting(r))
	return p.unknownTxIsReported(ctx, r, err)
}

// ReportPostings records a batch of reports in one coordinator commit
// (orchestrator.RecordCorePostings). A report refused alone fails the
// call, so the outbox sends the batch again; the ones already recorded
// are absorbed (idempotent per ref and status).
func (p postingReports) ReportPostings(ctx context.Context, rs []outbox.PostingReport) error {
	ps := make([]orchestrator.CorePosting, len(rs))
	for i, r := range rs {
		ps[i] = corePosting(r)
	}
	res, err := p.n.Orchestrator.RecordCorePostings(ctx, ps)
	if err != nil {
		return err
	}
	var errs []error
	for i, r := range res {
		if err := p.unknownTxIsReported(ctx, rs[i], r.Err); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func corePosting(r outbox.PostingReport) orchestrator.CorePosting {
	return orchestrator.CorePosting{TxID: r.Posting.TxID, BankID: r.Posting.Bank,
		Kind: string(r.Posting.Kind), Ref: r.Posting.Ref, Amount: r.Posting.Amount, Status: string(r.Status),
		CoreRef: r.CoreRef, ReasonCode: r.ReasonCode, CaseID: r.CaseID}
}

// unknownTxIsReported takes a report whose txid the coordinator does not
// know as reported (logged): it has no chain to land on.
func (p postingReports) unknownTxIsReported(ctx context.Context, r outbox.PostingReport, err error) error {
	if domainerr.Has(err, "TX_NOT_FOUND") {
		p.n.log.WarnContext(ctx, "node.posting_report_unknown_tx", "bank_id", r.Posting.Bank, "ref", r.Posting.Ref, "txid", r.Posting.TxID)
		return nil
	}
	return err
}

// kafkaCollector serves the Kafka publisher's metrics (kafkapub.Publisher
// Collectors) once it started; before, and without Kafka, it serves none.
// It describes nothing (an unchecked collector): the publisher is created
// after the registry.
type kafkaCollector struct{ n *Node }

func (kafkaCollector) Describe(chan<- *prometheus.Desc) {}

func (c kafkaCollector) Collect(ch chan<- prometheus.Metric) {
	if p := c.n.kafka.Load(); p != nil {
		for _, col := range p.Collectors() {
			col.Collect(ch)
		}
	}
}
