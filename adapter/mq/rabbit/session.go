package rabbit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/zcgw/zcgw/adapter/mq"
)

type pendingPut struct {
	queue string
	msg   *mq.Message
}

type session struct {
	c *conn

	mu      sync.Mutex
	closed  bool
	ch      *amqp.Channel
	returns chan amqp.Return
	puts    []pendingPut
	lastTag uint64 // highest delivery tag got in this unit; 0 when none
	lost    error  // the channel died while the unit held gets
}

// openChannel opens the session's channel in confirm mode.
func (s *session) openChannel() error {
	ch, err := s.c.ac.Channel()
	if err != nil {
		return s.c.mapErr("session", "", err)
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return s.c.mapErr("session", "", err)
	}
	if err := ch.Qos(1, 0, false); err != nil { // a waiting Get's consumer holds one message
		ch.Close()
		return s.c.mapErr("session", "", err)
	}
	s.returns = ch.NotifyReturn(make(chan amqp.Return, 256))
	s.ch = ch
	return nil
}

// channel returns a live channel, reopening it if a channel error closed
// it. If that happened while the unit held gets, the broker has already
// requeued them and the unit is marked lost (its Commit backs out).
func (s *session) channel(op, queue string) (*amqp.Channel, error) {
	if s.closed {
		return nil, &mq.Error{Reason: mq.ReasonHConnError, Op: op, Queue: queue, Cause: errors.New("session closed")}
	}
	if err := s.c.usable(op, queue); err != nil {
		return nil, err
	}
	if s.ch != nil && !s.ch.IsClosed() {
		return s.ch, nil
	}
	if s.lastTag != 0 && s.lost == nil {
		s.lost = errors.New("the AMQP channel closed during the unit of work; the broker requeued its gets")
	}
	s.lastTag = 0
	if err := s.openChannel(); err != nil {
		return nil, err
	}
	return s.ch, nil
}

func (s *session) Put(ctx context.Context, queue string, msg *mq.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.channel("put", queue); err != nil {
		return err
	}
	if err := mq.ValidateForPut(queue, msg); err != nil {
		return err
	}
	if err := s.c.exists("put", queue); err != nil {
		return err
	}
	s.puts = append(s.puts, pendingPut{queue: queue, msg: mq.Stamp(msg, s.c.t.opts.Clock.Now())})
	return nil
}

func (s *session) Get(ctx context.Context, queue string, match mq.Match) (*mq.Message, error) {
	msgs, err := s.getN(ctx, queue, 1, []mq.Match{match})
	if err != nil {
		return nil, err
	}
	return msgs[0], nil
}

// GetBatch takes up to max messages selected by any of matches
// (mq.BatchGetter): the first as Get takes it, the rest with basic.get
// without waiting.
func (s *session) GetBatch(ctx context.Context, queue string, max int, matches ...mq.Match) ([]*mq.Message, error) {
	return s.getN(ctx, queue, mq.BatchMax(max), matches)
}

func (s *session) getN(ctx context.Context, queue string, n int, matches []mq.Match) ([]*mq.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.channel("get", queue); err != nil {
		return nil, err
	}
	if err := s.c.exists("get", queue); err != nil {
		return nil, err
	}
	anyMsg := len(matches) == 0
	for _, m := range matches {
		anyMsg = anyMsg || m == mq.Any
	}
	if anyMsg && n == 1 {
		if ms, err := s.tryGet(queue, nil, n); err != nil || len(ms) > 0 {
			return ms, err
		}
		m, err := s.consumeOne(ctx, queue)
		if err != nil {
			return nil, err
		}
		return []*mq.Message{m}, nil
	}
	if anyMsg {
		return s.consumeBatch(ctx, queue, n, nil)
	}
	// Filtered: basic.get polling, backing off 1 ms -> PollInterval; a
	// batch is taken by a consumer that hands back what it does not want.
	pause := time.Millisecond
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		var ms []*mq.Message
		var err error
		if n > 1 {
			ms, err = s.consumeBatch(ctx, queue, n, matches)
			if mq.ReasonOf(err) == mq.ReasonNoMsgAvailable {
				err = nil
			}
		} else {
			ms, err = s.tryGet(queue, matches, n)
		}
		if err != nil || len(ms) > 0 {
			return ms, err
		}
		if ctx.Err() != nil {
			return nil, &mq.Error{Reason: mq.ReasonNoMsgAvailable, Op: "get", Queue: queue, Cause: ctx.Err()}
		}
		timer.Reset(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		pause = min(2*pause, s.c.t.opts.PollInterval)
	}
}

// consumeOne waits for the next message on queue with a consumer whose
// prefetch is 1, so the broker pushes it without polling, then cancels
// the consumer. A message pushed while the consumer is being cancelled is
// still returned (the wait ended with a message after all); the delivery
// stays unacknowledged in the unit like any other get.
func (s *session) consumeOne(ctx context.Context, queue string) (*mq.Message, error) {
	for {
		ch, err := s.channel("get", queue)
		if err != nil {
			return nil, err
		}
		tag := "zcgw-get-" + mq.NewID().String()[:20]
		deliveries, err := ch.Consume(queue, tag, false, false, false, false, nil)
		if err != nil {
			return nil, s.c.mapErr("get", queue, err)
		}
		var got *amqp.Delivery
		select {
		case d, ok := <-deliveries:
			if ok {
				got = &d
			}
		case <-ctx.Done():
		}
		_ = ch.Cancel(tag, false) // on failure the channel is closed, which ends deliveries too
		for d := range deliveries {
			if got == nil {
				got = &d
				continue
			}
			if err := ch.Nack(d.DeliveryTag, false, true); err != nil {
				s.c.log.Warn("mq.nack_failed", "queue", queue, "error", err.Error())
			}
		}
		if got == nil {
			if ctx.Err() != nil {
				return nil, &mq.Error{Reason: mq.ReasonNoMsgAvailable, Op: "get", Queue: queue, Cause: ctx.Err()}
			}
			return nil, s.c.mapErr("get", queue, amqp.ErrClosed)
		}
		m, err := s.live(ch, queue, got)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		s.lastTag = max(s.lastTag, got.DeliveryTag)
		return m, nil
	}
}

// live reads a delivery; an expired one is acked away (discarded) and
// reported as nil.
func (s *session) live(ch *amqp.Channel, queue string, d *amqp.Delivery) (*mq.Message, error) {
	m, expired, warn := fromDelivery(d, s.c.t.opts.Clock.Now())
	if warn != nil {
		s.c.log.Warn("mq.header_ignored", "queue", queue, "error", warn.Error())
	}
	if !expired {
		return m, nil
	}
	if err := ch.Ack(d.DeliveryTag, false); err != nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	s.c.log.Info("mq.expired_discarded", "queue", queue, "msg_id", m.MsgID.String())
	return nil, nil
}

// skipRoom is how many deliveries a filtered batch get may hold that it
// does not want (other requesters' replies) besides the n it wants.
const skipRoom = 16

// batchLinger is how long a batch get, once it has a message, waits for
// the next delivery before it ends the batch.
const batchLinger = 2 * time.Millisecond

// consumeBatch takes up to n messages matching any of matches (none: every
// message) with a consumer whose prefetch is n: the broker pushes what the
// queue holds back to back, without a round trip per message. It waits
// for the first until ctx is done; then takes deliveries until n are taken
// or none came for batchLinger. Deliveries still in flight after the
// consumer's cancel are kept too (the prefetch bounds them to n), so none
// is handed back and counted as a backout. Deliveries that match nothing
// are held (skipRoom more prefetch slots) and nacked back with requeue in
// their order at the end (counted in their x-delivery-count, as a filtered
// Get's pass does); when every slot holds one and nothing was taken it
// returns none, and the caller looks again after a pause.
func (s *session) consumeBatch(ctx context.Context, queue string, n int, matches []mq.Match) ([]*mq.Message, error) {
	ch, err := s.channel("get", queue)
	if err != nil {
		return nil, err
	}
	prefetch := n
	if len(matches) > 0 {
		prefetch += skipRoom
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	defer func() {
		if !ch.IsClosed() {
			_ = ch.Qos(1, 0, false)
		}
	}()
	tag := "zcgw-get-" + mq.NewID().String()[:20]
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return nil, s.c.mapErr("get", queue, err)
	}
	var out []*mq.Message
	var firstErr error
	var skipped []uint64 // held until the end, then handed back in order
	take := func(d amqp.Delivery) {
		m, err := s.live(ch, queue, &d)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if m == nil {
			return
		}
		if !mq.AnyOf(m, matches) {
			skipped = append(skipped, d.DeliveryTag)
			return
		}
		s.lastTag = max(s.lastTag, d.DeliveryTag)
		out = append(out, m)
	}
	linger := time.NewTimer(time.Hour)
	defer linger.Stop()
wait:
	for len(out) < n {
		var quiet <-chan time.Time
		if len(out) > 0 {
			linger.Reset(batchLinger)
			quiet = linger.C
		}
		select {
		case d, ok := <-deliveries:
			if !ok {
				break wait
			}
			// Every prefetch slot holds a message nobody here wants:
			// nothing more will come.
			if take(d); len(out) == 0 && len(skipped) >= prefetch {
				break wait
			}
		case <-quiet:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	_ = ch.Cancel(tag, false) // on failure the channel is closed, which ends deliveries too
	for d := range deliveries {
		take(d)
	}
	for _, t := range skipped {
		if err := ch.Nack(t, false, true); err != nil && firstErr == nil {
			firstErr = s.c.mapErr("get", queue, err)
		}
	}
	if firstErr != nil {
		return out, firstErr
	}
	if len(out) == 0 {
		if ctx.Err() != nil {
			return nil, &mq.Error{Reason: mq.ReasonNoMsgAvailable, Op: "get", Queue: queue, Cause: ctx.Err()}
		}
		if len(skipped) > 0 {
			return nil, nil
		}
		return nil, s.c.mapErr("get", queue, amqp.ErrClosed)
	}
	return out, nil
}

// maxScan bounds how many messages one filtered get passes over.
const maxScan = 10000

// tryGet takes up to n messages matching any of matches (none: every
// message) without waiting, in queue order. Expired
// messages it meets are acked (discarded); messages passed over by a
// filtered get are nacked back with requeue.
func (s *session) tryGet(queue string, matches []mq.Match, n int) (out []*mq.Message, err error) {
	ch, err := s.channel("get", queue)
	if err != nil {
		return nil, err
	}
	var skipped []uint64
	defer func() {
		for _, tag := range skipped {
			if err := ch.Nack(tag, false, true); err != nil {
				s.c.log.Warn("mq.nack_failed", "queue", queue, "error", err.Error())
			}
		}
	}()
	for scanned := 0; scanned < maxScan; scanned++ {
		d, ok, err := ch.Get(queue, false)
		if err != nil {
			return out, s.c.mapErr("get", queue, err)
		}
		if !ok {
			return out, nil
		}
		m, err := s.live(ch, queue, &d)
		if err != nil {
			return out, err
		}
		if m == nil {
			continue
		}
		if !mq.AnyOf(m, matches) {
			skipped = append(skipped, d.DeliveryTag)
			continue
		}
		s.lastTag = max(s.lastTag, d.DeliveryTag)
		if out = append(out, m); len(out) >= n {
			return out, nil
		}
	}
	return out, nil
}

func (s *session) Commit(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, err := s.channel("commit", "")
	if err != nil {
		if s.lastTag != 0 || len(s.puts) > 0 {
			s.reset()
			return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: err}
		}
		return err
	}
	if s.lost != nil {
		cause := s.lost
		s.reset()
		return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: cause}
	}
	if err := s.publish(ctx, ch); err != nil {
		backoutErr := s.backout(ch)
		s.reset()
		return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: errors.Join(err, backoutErr)}
	}
	if s.lastTag != 0 {
		if err := ch.Ack(s.lastTag, true); err != nil {
			s.reset()
			// Not acked: the broker redelivers the gets, and the puts
			// already published stay (at-least-once, never lost).
			return &mq.Error{Reason: mq.ReasonBackedOut, Op: "commit", Cause: fmt.Errorf("ack after publishing: %w", err)}
		}
	}
	s.reset()
	return nil
}

// publish sends the unit's puts and waits for every confirm; a message
// nacked by the broker or returned as unroutable fails the commit.
func (s *session) publish(ctx context.Context, ch *amqp.Channel) error {
	if len(s.puts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.t.opts.ConfirmTimeout)
	defer cancel()
	now := s.c.t.opts.Clock.Now()
	type sent struct {
		queue string
		dc    *amqp.DeferredConfirmation
	}
	var confirms []sent
	for _, p := range s.puts {
		pub, live := toPublishing(p.msg, now)
		if !live {
			s.c.log.Info("mq.expired_discarded", "queue", p.queue, "msg_id", p.msg.MsgID.String(), "at", "commit")
			continue
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", p.queue, true, false, pub)
		if err != nil {
			return s.c.mapErr("commit", p.queue, err)
		}
		confirms = append(confirms, sent{p.queue, dc})
	}
	for _, c := range confirms {
		acked, err := c.dc.WaitContext(ctx)
		if err != nil {
			return s.c.mapErr("commit", c.queue, fmt.Errorf("waiting for publisher confirm: %w", err))
		}
		if !acked {
			return &mq.Error{Reason: mq.ReasonUnexpectedError, Op: "commit", Queue: c.queue, Cause: errors.New("broker nacked the publish")}
		}
	}
	for {
		select {
		case r := <-s.returns:
			return &mq.Error{Reason: mq.ReasonUnknownObjectName, Op: "commit", Queue: r.RoutingKey,
				Cause: fmt.Errorf("broker returned the message: %d %s", r.ReplyCode, r.ReplyText)}
		default:
			return nil
		}
	}
}

// backout nacks the unit's gets with requeue (the quorum queue counts
// each in x-delivery-count).
func (s *session) backout(ch *amqp.Channel) error {
	if s.lastTag == 0 {
		return nil
	}
	if err := ch.Nack(s.lastTag, true, true); err != nil {
		return s.c.mapErr("rollback", "", err)
	}
	return nil
}

func (s *session) reset() {
	s.puts = nil
	s.lastTag = 0
	s.lost = nil
}

func (s *session) Rollback(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, err := s.channel("rollback", "")
	if err != nil {
		s.reset()
		return err
	}
	err = s.backout(ch)
	s.reset()
	return err
}

func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if s.ch != nil && !s.ch.IsClosed() {
		err = s.backout(s.ch)
		if cerr := s.ch.Close(); cerr != nil && !errors.Is(cerr, amqp.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	s.reset()
	s.closed = true
	s.c.mu.Lock()
	delete(s.c.sessions, s)
	s.c.mu.Unlock()
	return err
}
