package events

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The fixed values of the §12.2 header for every event this outbox writes.
const (
	SchemaVersion = "1.0"
	MessageType   = "EVENT"
)

// Kafka header keys (kafkapub writes them, consume reads them). Header
// values are strings; event_seq is in plain decimal.
const (
	HeaderEventSeq         = "event_seq"
	HeaderEventType        = "event_type"
	HeaderSchemaVersion    = "schema_version"
	HeaderMessageType      = "message_type"
	HeaderName             = "name"
	HeaderMessageID        = "message_id"
	HeaderOccurredAt       = "occurred_at"
	HeaderIdempotencyKey   = "idempotency_key"
	HeaderCorrelationID    = "correlation_id"
	HeaderCausationID      = "causation_id"
	HeaderProducerOrgID    = "producer_org_id"
	HeaderProducerSystemID = "producer_system_id"
	HeaderChainID          = "chain_id"
	HeaderAggregate        = "aggregate"
)

// Producer is the §12.2 producer of every event: ZC's organisation and the
// system that wrote the entry.
type Producer struct {
	OrgID    string `json:"org_id"`
	SystemID string `json:"system_id"`
}

// DefaultProducer is used when Install is given an empty Producer.
var DefaultProducer = Producer{OrgID: "ZC", SystemID: "zcgw-coordinator"}

// Message is one published event: the §12.2 common header (message_type
// EVENT, so event_seq is set and command_seq is omitted) plus chain_id,
// aggregate and the body. It is the Kafka value, as JSON.
type Message struct {
	SchemaVersion  string   `json:"schema_version"`
	MessageType    string   `json:"message_type"`
	Name           string   `json:"name"`
	MessageID      string   `json:"message_id"`
	OccurredAt     string   `json:"occurred_at"`
	IdempotencyKey string   `json:"idempotency_key"`
	EventSeq       int64    `json:"event_seq"`
	CorrelationID  string   `json:"correlation_id"`
	CausationID    string   `json:"causation_id,omitempty"`
	Producer       Producer `json:"producer"`
	ChainID        string   `json:"chain_id"`
	Aggregate      string   `json:"aggregate"`
	Body           Body     `json:"body"`
	// Signature is the §12.2 signature block (signature.go); nil when the
	// outbox was installed without a Signer.
	Signature *Signature `json:"signature,omitempty"`
}

// Body is the FinalityLog entry the event reports.
type Body struct {
	TxID      string          `json:"txid,omitempty"`
	GTID      string          `json:"gtid,omitempty"`
	StateFrom string          `json:"state_from,omitempty"`
	StateTo   string          `json:"state_to"`
	Payload   json.RawMessage `json:"payload"`
	// FinalitySeq is the entry's global FinalityLog event_seq (not the
	// per-chain I/F event_seq of the header; spec 002 §12.5 keeps them apart).
	FinalitySeq int64  `json:"finality_event_seq"`
	LogID       string `json:"log_id"`
	PrevHash    string `json:"prev_hash"`
	EntryHash   string `json:"entry_hash"`
}

// Header is one Kafka header as key and string value.
type Header struct{ Key, Value string }

// Headers returns the Kafka headers of m: event_seq, event_type and the
// §12.2 header fields (an empty causation_id is left out).
func (m Message) Headers() []Header {
	h := []Header{
		{HeaderEventSeq, strconv.FormatInt(m.EventSeq, 10)},
		{HeaderEventType, m.Name},
		{HeaderSchemaVersion, m.SchemaVersion},
		{HeaderMessageType, m.MessageType},
		{HeaderName, m.Name},
		{HeaderMessageID, m.MessageID},
		{HeaderOccurredAt, m.OccurredAt},
		{HeaderIdempotencyKey, m.IdempotencyKey},
		{HeaderCorrelationID, m.CorrelationID},
	}
	if m.CausationID != "" {
		h = append(h, Header{HeaderCausationID, m.CausationID})
	}
	return append(h,
		Header{HeaderProducerOrgID, m.Producer.OrgID},
		Header{HeaderProducerSystemID, m.Producer.SystemID},
		Header{HeaderChainID, m.ChainID},
		Header{HeaderAggregate, m.Aggregate},
	)
}

// EncodeHeaders writes headers as the EventOutbox.headers column:
// key=value pairs joined by '&', both query-escaped, in order.
func EncodeHeaders(hs []Header) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(h.Key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(h.Value))
	}
	return b.String()
}

// DecodeHeaders reads an EventOutbox.headers column back.
func DecodeHeaders(s string) ([]Header, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, "&")
	out := make([]Header, 0, len(parts))
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("events: headers pair %d %q has no '='", i+1, p)
		}
		var err error
		if k, err = url.QueryUnescape(k); err != nil {
			return nil, fmt.Errorf("events: headers pair %d key: %w", i+1, err)
		}
		if v, err = url.QueryUnescape(v); err != nil {
			return nil, fmt.Errorf("events: headers pair %d value: %w", i+1, err)
		}
		out = append(out, Header{Key: k, Value: v})
	}
	return out, nil
}
