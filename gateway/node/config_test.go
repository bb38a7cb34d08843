package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/strictjson"
)

// writeConfig writes DefaultConfig as node.json in a new folder after edit
// changed its generic form (so a test can misspell a key or change a type).
func writeConfig(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	raw, _ := json.Marshal(DefaultConfig())
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), out, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func bankAt(m map[string]any, i int) map[string]any { return m["banks"].([]any)[i].(map[string]any) }

func accountAt(m map[string]any, b, a int) map[string]any {
	return bankAt(m, b)["accounts"].([]any)[a].(map[string]any)
}

// node.json is decoded strictly: each bad document is refused with a
// ConfigError naming the field path; a good one loads.
func TestNodeConfigStrictNamesThePath(t *testing.T) {
	cases := []struct {
		name, path, problem string
		edit                func(m map[string]any)
	}{
		{"misspelt kafka block", "kafak", `unknown field: did you mean "kafka"?`, func(m map[string]any) {
			m["kafak"] = map[string]any{"brokers": []string{"127.0.0.1:9092"}}
		}},
		{"unknown key in a kafka block", "kafka.topic", `unknown field: did you mean "topics"?`, func(m map[string]any) {
			m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "topic": "x"}
		}},
		{"misspelt create_topics key", "kafka.create_topics.partition", `unknown field: did you mean "partitions"?`, func(m map[string]any) {
			m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "create_topics": map[string]any{"partition": 3, "replication": 1}}
		}},
		{"create_topics without partitions", "kafka.create_topics.partitions", "missing or below 1", func(m map[string]any) {
			m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "create_topics": map[string]any{"replication": 1}}
		}},
		{"create_topics without replication", "kafka.create_topics.replication", "missing or below 1", func(m map[string]any) {
			m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "create_topics": map[string]any{"partitions": 6}}
		}},
		{"create_topics as a number", "kafka.create_topics", "want an object, got the number 3", func(m map[string]any) {
			m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "create_topics": 3}
		}},
		{"create_topics without brokers", "kafka.brokers", "no broker", func(m map[string]any) {
			m["kafka"] = map[string]any{"create_topics": map[string]any{"partitions": 6, "replication": 3}}
		}},
		{"balance as a string", "banks[1].accounts[0].opening_balance", `want an integer, got the string "1000"`, func(m map[string]any) {
			accountAt(m, 1, 0)["opening_balance"] = "1000"
		}},
		{"fractional balance", "banks[0].accounts[2].opening_balance", "want an integer, got the number 10.5", func(m map[string]any) {
			accountAt(m, 0, 2)["opening_balance"] = 10.5
		}},
		{"balance out of range", "banks[1].accounts[1].opening_balance", "want an integer from -9223372036854775808 to 9223372036854775807, got the number 9223372036854775808", func(m map[string]any) {
			accountAt(m, 1, 1)["opening_balance"] = json.Number("9223372036854775808")
		}},
		{"null bank name", "banks[0].name", "want a string, got null", func(m map[string]any) {
			bankAt(m, 0)["name"] = nil
		}},
		{"unknown account key", "banks[1].accounts[2].balance", "unknown field (known: core_account, currency, customer_id, hash, name, opening_balance, pspr_refs)", func(m map[string]any) {
			accountAt(m, 1, 2)["balance"] = 5
		}},
		{"bool as string", "banks[0].real_time", `want true or false, got the string "yes"`, func(m map[string]any) {
			bankAt(m, 0)["real_time"] = "yes"
		}},
		{"embedded secret key misspelt", "api_keys[0].curent", `unknown field: did you mean "current"?`, func(m map[string]any) {
			m["api_keys"].([]any)[0].(map[string]any)["curent"] = "x"
		}},
		{"banks not an array", "banks", "want an array, got an object", func(m map[string]any) {
			m["banks"] = map[string]any{}
		}},
		{"repeated bank id", "banks[1].bank_id", `"001" is repeated`, func(m map[string]any) {
			bankAt(m, 1)["bank_id"] = "001"
		}},
		{"kafka topics without brokers", "kafka.brokers", "no broker", func(m map[string]any) {
			m["kafka"] = map[string]any{"default_topic": "zc.events"}
		}},
		{"postgres store without url", "store.url", "missing", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres"}
		}},
		{"store without kind", "store.kind", "missing: sqlite or postgres", func(m map[string]any) {
			m["store"] = map[string]any{"url": "postgres://h/db"}
		}},
		{"unknown store kind", "store.kind", `"mysql" is not one of sqlite, postgres`, func(m map[string]any) {
			m["store"] = map[string]any{"kind": "mysql"}
		}},
		{"misspelt store key", "store.uri", `unknown field: did you mean "url"?`, func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "uri": "postgres://h/db"}
		}},
		{"store url not postgres", "store.url", "not a postgres:// or postgresql:// URL", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "mysql://h/db"}
		}},
		{"store url without database", "store.url", "names no database", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "postgres://u:pw@h:5432/"}
		}},
		{"store url with search_path", "store.url", "sets search_path", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "postgres://h/db?search_path=x"}
		}},
		{"sqlite store with url", "store.url", "only with kind postgres", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "sqlite", "url": "postgres://h/db"}
		}},
		{"bad schema prefix", "store.schema_prefix", "is not one of", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "postgres://h/db", "schema_prefix": "Zc-"}
		}},
		{"store url for an unknown component", "store.urls.adapter-009", "not a component of this node (zc, ingress-nonces, mq, adapter-001, core-001, adapter-002, core-002)", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "postgres://h/db", "urls": map[string]any{"adapter-009": "postgres://h2/db"}}
		}},
		{"bad component url", "store.urls.core-001", "names no database", func(m map[string]any) {
			m["store"] = map[string]any{"kind": "postgres", "url": "postgres://h/db", "urls": map[string]any{"core-001": "postgres://h2"}}
		}},
	}
	for _, c := range cases {
		dir := writeConfig(t, c.edit)
		_, found, err := LoadConfig(dir)
		var ce *ConfigError
		if !found || !errors.As(err, &ce) || ce.Path != c.path || !strings.Contains(ce.Problem, c.problem) {
			t.Errorf("%s: found %v, error %v; want path %s: %s", c.name, found, err, c.path, c.problem)
			continue
		}
		if !strings.HasPrefix(err.Error(), filepath.Join(dir, ConfigFile)) || !strings.Contains(err.Error(), ": "+c.path+": ") {
			t.Errorf("%s: message %q does not name the file and path", c.name, err)
		}
		if _, err := LoadOrInitConfig(dir); !errors.As(err, &ce) {
			t.Errorf("%s: LoadOrInitConfig accepted it: %v", c.name, err)
		}
	}
	// Line and column of the misspelt key; a repeated key and trailing
	// data are refused too.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{\n  \"banks\": [],\n  \"kafak\": {}\n}"), 0o600)
	if _, _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "node.json:3:3: kafak: unknown field") {
		t.Errorf("line/column: %v", err)
	}
	for doc, want := range map[string]string{
		`{"addr":"a","addr":"b"}`: "addr: repeated key",
		`{"banks":[]} {}`:         "data after the JSON document",
		`{"banks":[`:              "node.json:1:11: the document ends early",
		`{"Kafka":{}}`:            `node.json:1:2: Kafka: unknown field (names are case-sensitive): did you mean "kafka"?`,
		"{\"addr\":\"\xff\"}":     "node.json:1:10: not valid UTF-8",
		`{"workers":1e3}`:         "workers: want an integer",
		`{"workers": "4"}`:        `node.json:1:13: workers: want an integer, got the string "4"`,
	} {
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(doc), 0o600)
		if _, _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
	// The default document (what LoadOrInitConfig writes) loads, with a
	// kafka block and an HMAC secret.
	dir = writeConfig(t, func(m map[string]any) {
		m["kafka"] = map[string]any{"brokers": []string{"b:9092"}, "topics": map[string]string{"Dns": "zc.dns"}}
		m["hmac"] = map[string]any{"current": "s", "previous": "p", "previous_until": "2026-12-01T00:00:00Z"}
	})
	c, found, err := LoadConfig(dir)
	if err != nil || !found || c.Kafka.Topics["Dns"] != "zc.dns" || c.HMAC.Previous != "p" || len(c.Banks) != 2 || c.Banks[1].Accounts[2].Balance != 1_000_000_000 {
		t.Fatalf("good config: %v %v %+v", found, err, c)
	}
	if _, found, err := LoadConfig(t.TempDir()); found || err != nil {
		t.Fatalf("absent node.json: found %v err %v", found, err)
	}
}

// FuzzNodeConfig: any document either decodes (to what encoding/json
// makes of it) or is refused with a ConfigError located at a line and
// column and wrapping strictjson's INVALID_REQUEST.
func FuzzNodeConfig(f *testing.F) {
	def, _ := json.Marshal(DefaultConfig())
	f.Add(def)
	f.Add([]byte(`{"kafak":{}}`))
	f.Add([]byte(`{"banks":[{"bank_id":"001","accounts":[{"opening_balance":"x"}]}]}`))
	f.Add([]byte(`{"hmac":null,"kafka":{"topics":{"a":"b"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Config
		err := decodeConfig(data, ConfigFile, &c)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line < 1 || ce.Col < 1 || ce.Problem == "" || domainerr.Code(err) != strictjson.ReasonCode {
				t.Fatalf("refusal %T %v is not a located ConfigError", err, err)
			}
			return
		}
		var std Config
		if err := json.Unmarshal(data, &std); err != nil || !reflect.DeepEqual(std, c) {
			t.Fatalf("decoded %+v, encoding/json %+v (%v)", c, std, err)
		}
	})
}

// The store block chooses where every component's database lives: SQLite
// files in the data folder by default, one schema per component of one
// PostgreSQL database, or a database of its own for a component; the
// password never shows in what the node prints.
func TestStoreBlockLocatesEveryComponent(t *testing.T) {
	dir := writeConfig(t, nil)
	l, err := Stores(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Postgres() || l.Location(store.CoordinatorDB) != filepath.Join(dir, "zc.db") || l.Location(store.AdapterDB("001")) != filepath.Join(dir, "adapter-001.db") ||
		l.Location(store.CoreDB("002")) != filepath.Join(dir, "core-002.db") || l.Location(store.MQDB) != filepath.Join(dir, "mq.db") ||
		l.Location(store.NoncesDB) != filepath.Join(dir, "ingress-nonces.db") {
		t.Fatalf("sqlite locations: %+v", l)
	}
	if l, err := Stores(t.TempDir()); err != nil || l.Postgres() {
		t.Fatalf("a folder without node.json is SQLite: %+v %v", l, err)
	}

	const secret = "s3cr3t-pw"
	dir = writeConfig(t, func(m map[string]any) {
		m["store"] = map[string]any{"kind": "postgres", "url": "postgres://zc:" + secret + "@db.example:5432/zcgw?sslmode=disable",
			"schema_prefix": "east_", "urls": map[string]any{"core-002": "postgresql://core:" + secret + "@cores.example/cores"}}
	})
	c, _, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	l = c.Locator(dir)
	for comp, want := range map[string]string{
		store.CoordinatorDB:    "postgres://zc:" + secret + "@db.example:5432/zcgw?search_path=east_zc&sslmode=disable",
		store.NoncesDB:         "postgres://zc:" + secret + "@db.example:5432/zcgw?search_path=east_ingress_nonces&sslmode=disable",
		store.MQDB:             "postgres://zc:" + secret + "@db.example:5432/zcgw?search_path=east_mq&sslmode=disable",
		store.AdapterDB("001"): "postgres://zc:" + secret + "@db.example:5432/zcgw?search_path=east_adapter_001&sslmode=disable",
		store.CoreDB("002"):    "postgresql://core:" + secret + "@cores.example/cores?search_path=east_core_002",
	} {
		if got := l.Location(comp); got != want {
			t.Errorf("%s: %s, want %s", comp, got, want)
		}
		if strings.Contains(l.Describe(comp), secret) || strings.Contains(l.Name(comp), secret) {
			t.Errorf("%s: the password shows: %s / %s", comp, l.Describe(comp), l.Name(comp))
		}
	}
	sum := c.StoreSummary(dir)
	if strings.Contains(sum, secret) || !strings.Contains(sum, "store postgres postgres://zc:xxxxx@db.example:5432/zcgw?sslmode=disable (schemas east_zc, east_ingress_nonces, east_mq, east_adapter_001, east_core_001, east_adapter_002, east_core_002 in postgresql://core:xxxxx@cores.example/cores)") {
		t.Errorf("summary: %s", sum)
	}
	// A bad URL is refused without echoing the password.
	dir = writeConfig(t, func(m map[string]any) {
		m["store"] = map[string]any{"kind": "postgres", "url": "postgres://zc:" + secret + "@db.example:99999x/zcgw"}
	})
	if _, _, err := LoadConfig(dir); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "store.url: not a URL") {
		t.Errorf("bad url: %v", err)
	}
}
