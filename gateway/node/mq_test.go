package node

import (
	"errors"
	"strings"
	"testing"
)

// A misconfigured mq block, or a bank core placement the block cannot
// serve, is refused at load naming the path of the bad field.
func TestMQConfigNamesThePath(t *testing.T) {
	cases := []struct {
		name, path, problem string
		edit                func(m map[string]any)
	}{
		{"missing kind", "mq.kind", "missing", func(m map[string]any) { m["mq"] = map[string]any{"url": "amqp://h/"} }},
		{"unknown kind", "mq.kind", `"ibmmq": want embedded, rabbitmq or amqp1`, func(m map[string]any) { m["mq"] = map[string]any{"kind": "ibmmq"} }},
		{"rabbitmq without url", "mq.url", "missing", func(m map[string]any) { m["mq"] = map[string]any{"kind": "rabbitmq"} }},
		{"amqp1 with an http url", "mq.url", "want amqp://", func(m map[string]any) { m["mq"] = map[string]any{"kind": "amqp1", "url": "http://h:5672/"} }},
		{"embedded with a url", "mq.url", "embedded queue is the file", func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "embedded", "url": "amqp://h/"}
		}},
		{"misspelt key", "mq.qeues", `did you mean "queues"?`, func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "qeues": map[string]any{}}
		}},
		{"unknown key in queues", "mq.queues.requests", `did you mean "request"?`, func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "queues": map[string]any{"requests": "IN"}}
		}},
		{"prefix without the bank", "mq.queues.prefix", "must contain {bank}", func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "queues": map[string]any{"prefix": "CORE."}}
		}},
		{"queue name too long for IBM MQ", "mq.queues.request", "length must be 1..48", func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "queues": map[string]any{"request": strings.Repeat("R", 45)}}
		}},
		{"same name twice", "mq.queues", "must differ", func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "queues": map[string]any{"reply": "REQUEST"}}
		}},
		{"address prefix on rabbitmq", "mq.address_prefix", "only for kind amqp1", func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/", "address_prefix": ""}
		}},
		{"bad declare", "mq.declare", `"always": want none or rabbitmq`, func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "amqp1", "url": "amqp://h/", "declare": "always"}
		}},
		{"external core on the embedded queue", "banks[1].core", "through a broker", func(m map[string]any) { bankAt(m, 1)["core"] = "external" }},
		{"unknown core placement", "banks[0].core", `"remote": want simulated or external`, func(m map[string]any) {
			m["mq"] = map[string]any{"kind": "rabbitmq", "url": "amqp://h/"}
			bankAt(m, 0)["core"] = "remote"
		}},
	}
	for _, c := range cases {
		dir := writeConfig(t, c.edit)
		_, _, err := LoadConfig(dir)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Path != c.path || !strings.Contains(ce.Problem, c.problem) {
			t.Errorf("%s: %v; want path %s: %s", c.name, err, c.path, c.problem)
		}
	}
	dir := writeConfig(t, func(m map[string]any) {
		m["mq"] = map[string]any{"kind": "amqp1", "url": "amqp://guest:guest@127.0.0.1:5672/", "address_prefix": "", "declare": "none",
			"queues": map[string]any{"prefix": "ZC.{bank}.", "reply": "RESP"}}
		bankAt(m, 1)["core"] = "external"
	})
	c, _, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q := c.MQ.Naming().For("002"); q.Request != "ZC.002.REQUEST" || q.Reply != "ZC.002.RESP" || q.Backout != "ZC.002.BACKOUT" ||
		!c.Banks[1].external() || c.Banks[0].external() || *c.MQ.AddressPrefix != "" {
		t.Fatalf("good mq block: %+v %+v", c.MQ, q)
	}
	// No mq block: today's embedded queue file and names.
	var none *MQConfig
	if none.kind() != MQEmbedded || none.Naming().For("001").Request != "CORE.001.REQUEST" {
		t.Fatal("default mq")
	}
}
