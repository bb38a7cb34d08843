package demo

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// Overnight is the night's file exchange with the batch-window bank's
// core.
type Overnight struct {
	Bank        string
	PostingFile string // delivered to the core's inbound folder
	ResultFile  string // the core's answer
	Records     int
	Posted      int // postings the core's result file confirmed (APPLIED)
	Blocked     int // postings the core refused (BLOCKED, with a Case)
}

// night: the BULK postings of the batch-window bank were routed to its
// overnight file (its core takes them in its batch window, not over MQ).
// The overnight-send job cuts and delivers the file, the core (the node
// runs its batch pickup) answers with a result file, and the
// overnight-receive job ingests it: each posting APPLIED or BLOCKED.
func (d *day) night() error {
	b := d.n.Banks[fileBank]
	waiting, err := b.Adapter.Outbox().List(d.ctx, outbox.Filter{Status: outbox.Pending, Route: outbox.RouteFILE})
	if err != nil {
		return err
	}
	d.at("22:00")
	d.section("overnight file to bank " + fileBank + "'s core (scheduler job " + overnight.SendJob + "): " +
		plural(len(waiting), "posting") + " routed to the file")
	if err := d.runJob(overnight.SendJob); err != nil {
		return err
	}
	files, err := b.Exchange.Files(d.ctx)
	if err != nil {
		return err
	}
	if len(waiting) == 0 && len(files) == 0 {
		return nil
	}
	if len(files) != 1 {
		return violated(InvOvernight, "%d postings waited for the overnight file, %d files were cut", len(waiting), len(files))
	}
	f := files[0]
	o := &d.sum.Overnight
	o.Bank, o.Records = fileBank, f.Records
	o.PostingFile = filepath.Join(b.Overnight.Inbound, f.Name)
	o.ResultFile = filepath.Join(b.Overnight.Results, overnight.ResultName(f.Name))
	d.printf("  delivered %s (%d postings); the core runs it in its batch window…\n", o.PostingFile, f.Records)
	if err := d.waitFile(o.ResultFile, 20*time.Second); err != nil {
		return err
	}
	if _, err := os.Stat(o.PostingFile); err != nil { // the core moved the file it ran
		o.PostingFile = filepath.Join(b.Overnight.Inbound, corepickup.Processed, f.Name)
	}
	d.printf("  the core answered: %s\n", o.ResultFile)
	d.at("22:30")
	d.section("overnight result ingested (scheduler job " + overnight.ReceiveJob + "; 06:00 by default, run as soon as the core answered)")
	if err := d.runJob(overnight.ReceiveJob); err != nil {
		return err
	}
	for _, p := range waiting {
		e, err := b.Adapter.Outbox().Get(d.ctx, p.ID)
		if err != nil {
			return err
		}
		switch e.Status {
		case outbox.Applied:
			o.Posted++
		case outbox.Blocked:
			o.Blocked++
		}
	}
	d.printf("  %d postings confirmed by the core (APPLIED), %d refused (BLOCKED)\n", o.Posted, o.Blocked)
	if o.Posted != len(waiting) || o.Records != len(waiting) {
		return violated(InvOvernight, "%d postings waited for the file, %d were in it, %d applied, %d blocked", len(waiting), o.Records, o.Posted, o.Blocked)
	}
	return nil
}

// waitFile waits until path exists, for at most limit of real time.
func (d *day) waitFile(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return violated(InvOvernight, "no result file %s after %s", path, limit)
		}
		if err := d.pause(50 * time.Millisecond); err != nil {
			return err
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
