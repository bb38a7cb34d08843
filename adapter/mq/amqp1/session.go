package amqp1

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/zcgw/zcgw/adapter/mq"
)

type pendingPut struct {
	queue string
	msg   *mq.Message
}

// delivery is a message got in the open unit: unsettled on its receiver.
type delivery struct {
	r *amqp.Receiver
	m *amqp.Message
}

type session struct {
	c  *conn
	as *amqp.Session

	mu        sync.Mutex
	closed    bool
	senders   map[string]*amqp.Sender
	receivers map[string]*amqp.Receiver
	puts      []pendingPut
	got       []delivery
}

func (s *session) check(op, queue string) error {
	if s.closed {
		return &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("session closed")}
	}
	return s.c.usable(op, queue)
}

func (s *session) Put(ctx context.Context, queue string, msg *mq.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("put", queue); err != nil {
		return err
	}
	if err := mq.ValidateForPut(queue, msg); err != nil {
		return err
	}
	if err := s.c.probe(ctx, "put", queue); err != nil {
		return err
	}
	s.puts = append(s.puts, pendingPut{queue: queue, msg: mq.Stamp(msg, s.c.t.opts.Clock.Now())})
	return nil
}

// receiver is the session's receiving link on queue, with manual credit:
// the broker sends only what a Get asks for.
func (s *session) receiver(ctx context.Context, queue string) (*amqp.Receiver, error) {
	if r, ok := s.receivers[queue]; ok {
		return r, nil
	}
	if err := s.c.probe(ctx, "get", queue); err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.t.opts.DialTimeout)
	defer cancel()
	r, err := s.as.NewReceiver(actx, s.c.t.address(queue), &amqp.ReceiverOptions{Credit: -1})
	if err != nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	s.receivers[queue] = r
	return r, nil
}

// look takes the message at the head of the queue without waiting
// longer than LookWait: one credit, and when nothing came, the credit is
// drained so none stays with the broker (an idle link must not be handed
// a message). The wait is needed because RabbitMQ 3.x answers a drain
// without handing over what its quorum queue holds.
func (s *session) look(ctx context.Context, queue string, r *amqp.Receiver) (*amqp.Message, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.t.opts.LookWait)
	defer cancel()
	return s.wait(lctx, queue, r)
}

// wait waits for the next message with one credit until ctx is done, then
// drains the credit; a message that arrived meanwhile is still returned.
func (s *session) wait(ctx context.Context, queue string, r *amqp.Receiver) (*amqp.Message, error) {
	if m := r.Prefetched(); m != nil {
		return m, nil
	}
	if err := r.IssueCredit(1); err != nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	m, err := r.Receive(ctx, nil)
	if err == nil {
		return m, nil
	}
	if ctx.Err() == nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.t.opts.DialTimeout)
	defer cancel()
	if err := r.DrainCredit(dctx, nil); err != nil {
		return nil, s.c.mapErr("get", queue, fmt.Errorf("draining link credit: %w", err))
	}
	return r.Prefetched(), nil
}

func (s *session) Get(ctx context.Context, queue string, match mq.Match) (*mq.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("get", queue); err != nil {
		return nil, err
	}
	r, err := s.receiver(ctx, queue)
	if err != nil {
		return nil, err
	}
	pause := time.Millisecond
	for {
		var m *mq.Message
		if match == mq.Any && ctx.Err() == nil {
			m, err = s.takeWaiting(ctx, queue, r)
		} else {
			m, err = s.scan(ctx, queue, r, match)
		}
		if err != nil || m != nil {
			return m, err
		}
		if ctx.Err() != nil {
			return nil, &mq.Error{Reason: mq.ReasonNoMsgAvailable, Op: "get", Queue: queue, Cause: ctx.Err()}
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		pause = min(2*pause, s.c.t.opts.PollInterval)
	}
}

// accept reads a delivery into the unit; expired ones are accepted away
// (nil message).
func (s *session) accept(ctx context.Context, queue string, r *amqp.Receiver, w *amqp.Message) (*mq.Message, error) {
	m, expired, warn := s.c.t.fromWire(w, s.c.t.opts.Clock.Now())
	if warn != nil {
		s.c.log.Warn("mq.header_ignored", "queue", queue, "error", warn.Error())
	}
	if expired {
		if err := r.AcceptMessage(context.WithoutCancel(ctx), w); err != nil {
			return nil, s.c.mapErr("get", queue, err)
		}
		s.c.log.Info("mq.expired_discarded", "queue", queue, "msg_id", m.MsgID.String())
		return nil, nil
	}
	s.got = append(s.got, delivery{r: r, m: w})
	return m, nil
}

// takeWaiting waits (until ctx is done) for the next live message.
func (s *session) takeWaiting(ctx context.Context, queue string, r *amqp.Receiver) (*mq.Message, error) {
	for {
		w, err := s.wait(ctx, queue, r)
		if err != nil || w == nil {
			return nil, err
		}
		m, err := s.accept(ctx, queue, r, w)
		if err != nil || m != nil {
			return m, err
		}
	}
}

// maxScan bounds how many messages one look of a filtered get passes over.
const maxScan = 10000

// scan looks at the queue's messages in order without waiting and takes
// the first that matches; those passed over are released back.
func (s *session) scan(ctx context.Context, queue string, r *amqp.Receiver, match mq.Match) (*mq.Message, error) {
	var skipped []*amqp.Message
	defer func() {
		for _, w := range skipped {
			if err := r.ReleaseMessage(context.WithoutCancel(ctx), w); err != nil {
				s.c.log.Warn("mq.release_failed", "queue", queue, "error", err.Error())
			}
		}
	}()
	for n := 0; n < maxScan; n++ {
		w, err := s.look(ctx, queue, r)
		if err != nil || w == nil {
			return nil, err
		}
		m, expired, _ := s.c.t.fromWire(w, s.c.t.opts.Clock.Now())
		if !expired && !match.Matches(m) {
			skipped = append(skipped, w)
			continue
		}
		if m, err = s.accept(ctx, queue, r, w); err != nil || m != nil {
			return m, err
		}
	}
	return nil, nil
}

func (s *session) sender(ctx context.Context, queue string) (*amqp.Sender, error) {
	if snd, ok := s.senders[queue]; ok {
		return snd, nil
	}
	snd, err := s.as.NewSender(ctx, s.c.t.address(queue), &amqp.SenderOptions{SettlementMode: ptr(amqp.SenderSettleModeUnsettled)})
	if err != nil {
		return nil, s.c.mapErr("commit", queue, err)
	}
	s.senders[queue] = snd
	return snd, nil
}

// publish sends the unit's puts and waits until the broker accepted each.
func (s *session) publish(ctx context.Context) error {
	if len(s.puts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.t.opts.SendTimeout)
	defer cancel()
	now := s.c.t.opts.Clock.Now()
	type sent struct {
		queue   string
		receipt amqp.SendReceipt
	}
	var receipts []sent
	for _, p := range s.puts {
		w, live := s.c.t.toWire(p.msg, now)
		if !live {
			s.c.log.Info("mq.expired_discarded", "queue", p.queue, "msg_id", p.msg.MsgID.String(), "at", "commit")
			continue
		}
		snd, err := s.sender(ctx, p.queue)
		if err != nil {
			return err
		}
		rc, err := snd.SendWithReceipt(ctx, w, nil)
		if err != nil {
			return s.c.mapErr("commit", p.queue, err)
		}
		receipts = append(receipts, sent{p.queue, rc})
	}
	for _, r := range receipts {
		state, err := r.receipt.Wait(ctx)
		if err != nil {
			return s.c.mapErr("commit", r.queue, fmt.Errorf("waiting for the broker to accept: %w", err))
		}
		if _, ok := state.(*amqp.StateAccepted); !ok {
			return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "commit", Queue: r.queue, Cause: fmt.Errorf("broker settled the message as %T %+v", state, state)}
		}
	}
	return nil
}

func (s *session) Commit(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("commit", ""); err != nil {
		if len(s.got) > 0 || len(s.puts) > 0 {
			s.reset()
			return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: err}
		}
		return err
	}
	if err := s.publish(ctx); err != nil {
		backoutErr := s.backout(ctx)
		s.reset()
		return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: errors.Join(err, backoutErr)}
	}
	var errs []error
	for _, d := range s.got {
		if err := d.r.AcceptMessage(context.WithoutCancel(ctx), d.m); err != nil {
			errs = append(errs, err)
		}
	}
	s.reset()
	if len(errs) > 0 {
		// Not accepted: the broker redelivers the gets, and the puts
		// already sent stay (at-least-once, never lost).
		return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: fmt.Errorf("accept after sending: %w", errors.Join(errs...))}
	}
	return nil
}

// backout returns the unit's deliveries as failed (the broker counts
// them in the delivery count).
func (s *session) backout(ctx context.Context) error {
	var errs []error
	for _, d := range s.got {
		if err := d.r.ReleaseMessage(context.WithoutCancel(ctx), d.m); err != nil {
			errs = append(errs, s.c.mapErr("rollback", "", err))
		}
	}
	return errors.Join(errs...)
}

func (s *session) reset() {
	s.puts = nil
	s.got = nil
}

func (s *session) Rollback(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("rollback", ""); err != nil {
		s.reset()
		return err
	}
	err := s.backout(ctx)
	s.reset()
	return err
}

func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.t.opts.DialTimeout)
	defer cancel()
	var err error
	if s.c.usable("close", "") == nil {
		err = s.backout(ctx)
		if cerr := s.as.Close(ctx); cerr != nil {
			err = errors.Join(err, s.c.mapErr("close", "", cerr))
		}
	}
	s.reset()
	s.closed = true
	s.c.mu.Lock()
	delete(s.c.sessions, s)
	s.c.mu.Unlock()
	return err
}
