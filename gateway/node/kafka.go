package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
)

// kafkaPrepareTimeout bounds the topic check at start.
const kafkaPrepareTimeout = 10 * time.Second

// startPublisher creates the event publisher and checks its topics
// (creating the missing ones when node.json sets kafka.create_topics). A
// missing topic without that setting refuses the start, naming the topic
// and the setting. A broker that cannot be reached does not: the node
// starts, /readyz and zcgw_event_publisher_failing show the publisher
// failing, and Run checks the topics again once the broker answers.
func startPublisher(ctx context.Context, ob *events.Outbox, cfg kafkapub.Config, log *slog.Logger) (*kafkapub.Publisher, error) {
	pub, err := kafkapub.New(ob, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka publisher: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, kafkaPrepareTimeout)
	defer cancel()
	err = pub.Prepare(pctx)
	var mt *kafkapub.MissingTopicError
	switch {
	case errors.As(err, &mt):
		return nil, fmt.Errorf(`kafka publisher: %w; %s does not set kafka.create_topics: create the topic, or set "create_topics": {"partitions": N, "replication": R} in its kafka block`, err, ConfigFile)
	case err != nil:
		log.Warn("node.kafka_unavailable", "error", err)
	}
	return pub, nil
}
