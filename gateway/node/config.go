package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/strictjson"
	"github.com/zcgw/zcgw/formats/zengin"
)

// ConfigFile is the node configuration's file name in the data folder.
const ConfigFile = "node.json"

// Secret is a shared secret with its rotation window (spec 002 §12.6.4).
type Secret struct {
	Current       string `json:"current"`
	Previous      string `json:"previous,omitempty"`
	PreviousUntil string `json:"previous_until,omitempty"` // RFC3339; required with previous
}

func (s Secret) rotating() *signing.Rotating {
	return &signing.Rotating{Current: []byte(s.Current), Previous: []byte(s.Previous), PreviousUntil: s.PreviousUntil}
}

// APIKey is one /api credential.
type APIKey struct {
	Scope  string `json:"scope"`             // OPERATOR | PARTICIPANT
	BankID string `json:"bank_id,omitempty"` // PARTICIPANT
	Name   string `json:"name"`
	Secret
}

// Account is a customer account opened at a bank's core and registered
// with its adapter.
type Account struct {
	Hash        string `json:"hash"`         // account_hash on the API
	CoreAccount string `json:"core_account"` // the core's account key (coresim.AccountKey form)
	Name        string `json:"name"`
	Balance     int64  `json:"opening_balance"`
	// PSPRRefs are payee references (pspr_ref) registered in the bank's
	// directory for this account: an EXPRESS transfer naming one of them
	// and no payee.account_hash is credited here.
	PSPRRefs []string `json:"pspr_refs,omitempty"`
	// Currency is the account's ISO 4217 currency ("" = JPY); anything
	// else must be in the bank's Currencies (a foreign-currency deposit).
	Currency string `json:"currency,omitempty"`
	// CustomerID is the bank's customer holding this account: it sees the
	// account on the customer API (X-Customer-Id, docs/bank-api.md).
	CustomerID string `json:"customer_id,omitempty"`
}

// BankConfig is one participant bank served by this node.
type BankConfig struct {
	BankID   string    `json:"bank_id"`
	Name     string    `json:"name"`
	HLimit   int64     `json:"h_limit"`
	RealTime bool      `json:"real_time"`
	Accounts []Account `json:"accounts"`
	// BOJOpening is the opening balance of the bank's simulated BOJ
	// current account, set once when the account is first opened
	// (default bankapi.DefaultBOJPrefund). DNS settlement and HIGH_VALUE
	// move it afterwards.
	BOJOpening *int64 `json:"boj_opening_balance,omitempty"`
	// Core is where the bank's core runs: "simulated" (default, in the
	// node) or "external" (another process serves its queues through the
	// broker of the mq block; see mq.go).
	Core string `json:"core,omitempty"`
	// ZenginNames is the name character set of the bank's Zengin files
	// (file drop): "strict" (default, ｰ refused) or "long-vowel".
	ZenginNames string `json:"zengin_names,omitempty"`
	// Currencies are the further currencies the bank keeps accounts in
	// (adapter.Config.Currencies).
	Currencies []string `json:"currencies,omitempty"`
	// FxProvider makes the bank an FX provider (Participants.is_fx_provider,
	// coordinator/fx); CurrencyLimits are its H limits in currencies other
	// than JPY (ParticipantCurrencyLimits): what it may pay out in them.
	FxProvider     bool             `json:"fx_provider,omitempty"`
	CurrencyLimits map[string]int64 `json:"currency_limits,omitempty"`
	// CustodyAccount is the hash of one of Accounts, the bank's custody
	// (別段預金) account: a credit for an account the bank does not hold
	// goes there (adapter.Config.CustodyAccount), and a teller resolves it
	// (docs/bank-api.md). "": such a credit is refused.
	CustodyAccount string `json:"custody_account,omitempty"`
}

// bojOpening is BOJOpening or its default.
func (b BankConfig) bojOpening() int64 {
	if b.BOJOpening != nil {
		return *b.BOJOpening
	}
	return bankapi.DefaultBOJPrefund
}

// Config is DATA/node.json.
type Config struct {
	Addr       string   `json:"addr"`
	CronSecret string   `json:"cron_secret"`
	APIKeys    []APIKey `json:"api_keys"`
	// HMAC is the ingress HMAC fallback secret (nil: fallback refused).
	HMAC *Secret `json:"hmac,omitempty"`
	// AllowUnauthenticatedUI mirrors ZC_ALLOW_UNAUTHENTICATED_UI.
	AllowUnauthenticatedUI bool `json:"allow_unauthenticated_ui"`
	// Workers is how many orchestrator Run loops the node starts (default
	// 1); they share orchestrator.DefaultRunConcurrency items in flight.
	Workers int          `json:"workers"`
	Banks   []BankConfig `json:"banks"`
	// Kafka, when it names brokers, starts the event publisher that drains
	// the event outbox to Kafka. Without it every FinalityLog event stays in
	// the event outbox (`zcgw events tail` follows it).
	Kafka *KafkaConfig `json:"kafka,omitempty"`
	// MQ chooses the queue manager between the adapters and the cores
	// (nil: the embedded queue file DATA/mq.db). See mq.go.
	MQ *MQConfig `json:"mq,omitempty"`
	// Store chooses where the node's databases live (nil: SQLite files in
	// the data folder). See StoreConfig.
	Store *StoreConfig `json:"store,omitempty"`
	// FilesRoot is the folder that holds the banks' file-drop folders
	// (FILES_ROOT/banks/<bank_id>/inbound, ...; docs/filedrop.md): ""
	// is the data folder, a relative path is taken from the data folder.
	// Several nodes on one shared database name one shared folder here;
	// the atomic rename into processing/ gives each dropped file to
	// exactly one of them.
	FilesRoot string `json:"files_root,omitempty"`
}

// FilesDir is the folder under which the node on dataDir keeps the
// banks' file-drop folders (FilesRoot resolved).
func (c Config) FilesDir(dataDir string) string {
	switch {
	case c.FilesRoot == "":
		return dataDir
	case filepath.IsAbs(c.FilesRoot):
		return c.FilesRoot
	}
	return filepath.Join(dataDir, c.FilesRoot)
}

// StoreConfig is node.json's store block: where every database of the
// node lives (docs/storage.md). Kind "sqlite" (the default) keeps one file
// per component in the data folder. Kind "postgres" puts each component
// in its own schema (zc, ingress_nonces, mq, adapter_001, core_001, …,
// each after SchemaPrefix) of the database URL names; URLs moves a
// component to a database of its own. The data folder keeps node-id,
// node.lock, the signing key, the files and the logs either way.
type StoreConfig struct {
	Kind string `json:"kind"` // sqlite | postgres
	// URL is the PostgreSQL database, postgres://user:password@host:port/db
	// (no search_path: each component gets its schema).
	URL string `json:"url,omitempty"`
	// SchemaPrefix starts every schema name, to share one database
	// between deployments.
	SchemaPrefix string `json:"schema_prefix,omitempty"`
	// URLs maps a component (zc, ingress-nonces, mq, adapter-001,
	// core-001, …) to a database of its own; the others stay in URL.
	URLs map[string]string `json:"urls,omitempty"`
}

// Locator is where the node on dataDir keeps each component's database
// (store.Locator: the one owner of that answer).
func (c Config) Locator(dataDir string) store.Locator {
	l := store.Locator{Kind: store.SQLite, Dir: dataDir}
	if s := c.Store; s != nil && store.Kind(s.Kind) == store.Postgres {
		l.Kind, l.URL, l.Prefix, l.URLs = store.Postgres, s.URL, s.SchemaPrefix, s.URLs
	}
	return l
}

// Components lists the databases a node with this configuration opens
// (store component names): the coordinator, the ingress nonces, the
// embedded queue manager when it is the mq, and per bank its adapter and,
// when simulated in the node, its core.
func (c Config) Components() []string {
	out := []string{store.CoordinatorDB, store.NoncesDB}
	if c.MQ.kind() == MQEmbedded {
		out = append(out, store.MQDB)
	}
	for _, b := range c.Banks {
		out = append(out, store.AdapterDB(b.BankID))
		if !b.external() {
			out = append(out, store.CoreDB(b.BankID))
		}
	}
	return out
}

// Stores is the Locator of a data folder as its node.json says (SQLite
// when there is none): how a CLI command finds the databases of a folder
// the way zcgw serve does.
func Stores(dataDir string) (store.Locator, error) {
	c, _, err := LoadConfig(dataDir)
	if err != nil {
		return store.Locator{}, err
	}
	return c.Locator(dataDir), nil
}

// StoreSummary describes the store block for command output, the
// password masked: "sqlite files in DIR" or "postgres URL (schemas …)".
func (c Config) StoreSummary(dataDir string) string {
	l := c.Locator(dataDir)
	if !l.Postgres() {
		return "store sqlite (files in " + dataDir + ")"
	}
	var schemas []string
	for _, comp := range c.Components() {
		s := l.SchemaName(comp)
		if _, own := l.URLs[comp]; own {
			s += " in " + store.Redact(l.URLs[comp])
		}
		schemas = append(schemas, s)
	}
	return fmt.Sprintf("store postgres %s (schemas %s)", store.Redact(l.URL), strings.Join(schemas, ", "))
}

// validateStore checks the store block (nil is SQLite).
func (c Config) validateStore(bad func(path, problem string, args ...any) error) error {
	s := c.Store
	if s == nil {
		return nil
	}
	switch store.Kind(s.Kind) {
	case store.SQLite:
		switch {
		case s.URL != "":
			return bad("store.url", "only with kind postgres (sqlite keeps its files in the data folder)")
		case s.SchemaPrefix != "":
			return bad("store.schema_prefix", "only with kind postgres")
		case len(s.URLs) > 0:
			return bad("store.urls", "only with kind postgres")
		}
		return nil
	case store.Postgres:
	case "":
		return bad("store.kind", "missing: sqlite or postgres")
	default:
		return bad("store.kind", "%q is not one of sqlite, postgres", s.Kind)
	}
	if p := store.CheckPostgresURL(s.URL); p != "" {
		return bad("store.url", "%s", p)
	}
	if p := store.CheckSchemaPrefix(s.SchemaPrefix); p != "" {
		return bad("store.schema_prefix", "%s", p)
	}
	known := map[string]bool{}
	for _, comp := range c.Components() {
		known[comp] = true
	}
	for _, comp := range slices.Sorted(maps.Keys(s.URLs)) {
		u := s.URLs[comp]
		if !known[comp] {
			return bad("store.urls."+comp, "not a component of this node (%s)", strings.Join(c.Components(), ", "))
		}
		if p := store.CheckPostgresURL(u); p != "" {
			return bad("store.urls."+comp, "%s", p)
		}
	}
	return nil
}

// KafkaConfig is where the event fan-out publishes.
type KafkaConfig struct {
	Brokers []string `json:"brokers"`
	// DefaultTopic receives every event type no family matches.
	DefaultTopic string `json:"default_topic,omitempty"`
	// Topics maps an event-type prefix ("Dns", "Htlc", …) to its topic.
	Topics map[string]string `json:"topics,omitempty"`
	// CreateTopics, when set, creates the missing topics at start with
	// this layout. Without it a missing topic refuses the start, naming
	// the topic and this setting.
	CreateTopics *KafkaTopicLayout `json:"create_topics,omitempty"`
}

// KafkaTopicLayout is how missing topics are created (both required).
type KafkaTopicLayout struct {
	Partitions  int `json:"partitions"`
	Replication int `json:"replication"`
}

func randomSecret() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// FileAccounts maps the configured accounts to their account_hash as a
// Zengin file names them (filedrop.Config.Accounts): bank code (the bank's
// default 全銀 code), then branch, type and number of the core key, which
// is the same account. An account whose core key is not of that shape
// cannot be named by a file and is left out.
func (c Config) FileAccounts() map[filedrop.Account]string {
	out := map[filedrop.Account]string{}
	for _, b := range c.Banks {
		for _, a := range b.Accounts {
			k, err := coreacct.Parse(a.CoreAccount)
			if err != nil {
				continue
			}
			out[filedrop.Account{BankCode: filedrop.DefaultZenginCode(b.BankID), BranchCode: k.Branch, Type: k.Type, Number: k.Number}] = a.Hash
		}
	}
	return out
}

// DefaultConfig is a two-bank node (001, 002), three accounts each, with
// fresh random secrets and one API key per bank plus an operator key.
func DefaultConfig() Config {
	c := Config{Addr: "127.0.0.1:8080", CronSecret: randomSecret(), Workers: 1}
	c.APIKeys = append(c.APIKeys, APIKey{Scope: signing.ScopeOperator, Name: "operator", Secret: Secret{Current: randomSecret()}})
	for i, id := range []string{"001", "002"} {
		b := BankConfig{BankID: id, Name: fmt.Sprintf("Bank %s", id), HLimit: 10_000_000_000_000, RealTime: true}
		for n := 1; n <= 3; n++ {
			b.Accounts = append(b.Accounts, Account{Hash: fmt.Sprintf("h:%s-%04d", id, n),
				CoreAccount: fmt.Sprintf("100-1-%07d", n), Name: fmt.Sprintf("CUSTOMER %c%d", 'A'+i, n), Balance: 1_000_000_000,
				CustomerID: fmt.Sprintf("cust-%s-%d", id, n)})
		}
		c.Banks = append(c.Banks, b)
		c.APIKeys = append(c.APIKeys, APIKey{Scope: signing.ScopeParticipant, BankID: id, Name: "bank-" + id, Secret: Secret{Current: randomSecret()}})
	}
	return c
}

// LoadOrInitConfig reads DATA/node.json, writing DefaultConfig there first
// when it does not exist (0600: it holds secrets).
func LoadOrInitConfig(dataDir string) (Config, error) {
	c, found, err := LoadConfig(dataDir)
	if err != nil || found {
		return c, err
	}
	c = DefaultConfig()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return c, err
	}
	out, _ := json.MarshalIndent(c, "", "  ")
	return c, os.WriteFile(filepath.Join(dataDir, ConfigFile), append(out, '\n'), 0o600)
}

// ConfigError says where node.json is wrong: the field path (as
// banks[1].accounts[0].opening_balance), the line and column where the
// offending key or value starts when known, and why. A decoding refusal
// wraps strictjson's (INVALID_REQUEST).
type ConfigError struct {
	File      string // node.json, or its full path
	Path      string // "" for the whole document
	Line, Col int    // 0 when not known
	Problem   string
	Err       error // the strictjson refusal, nil for a validation error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// Unwrap returns the strictjson refusal, if any.
func (e *ConfigError) Unwrap() error { return e.Err }

// decodeConfig decodes data into c through strictjson with its file rules:
// an unknown key (with a "did you mean"), a repeated key, a key in another
// case, a value of the wrong JSON type, an integer out of range, invalid
// UTF-8 and data after the document are refused with a *ConfigError naming
// the field path and line:column.
func decodeConfig(data []byte, file string, c *Config) error {
	err := strictjson.Decode(data, c, strictjson.Options{DisallowUnknownFields: true, Config: true})
	e, ok := strictjson.As(err)
	if !ok {
		return err
	}
	line, col := strictjson.Position(data, e.Offset)
	return &ConfigError{File: file, Path: e.Field, Line: line, Col: col, Problem: e.Reason(), Err: err}
}

// LoadConfig reads and checks DATA/node.json without writing anything.
// found is false (and the error nil) when the file does not exist. A bad
// document is a *ConfigError naming the field path: node.json is decoded
// strictly (unknown or repeated keys and wrong types are refused), then
// validated.
func LoadConfig(dataDir string) (c Config, found bool, err error) {
	path := filepath.Join(dataDir, ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, err
	}
	if err := decodeConfig(b, path, &c); err != nil {
		return Config{}, true, err
	}
	if err := c.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return Config{}, true, err
	}
	return c, true, nil
}

// Validate checks the configuration. Its errors are *ConfigError naming
// the field path (File is node.json; LoadConfig puts the full path).
func (c Config) Validate() error {
	bad := func(path, problem string, args ...any) error {
		return &ConfigError{File: ConfigFile, Path: path, Problem: fmt.Sprintf(problem, args...)}
	}
	if len(c.Banks) == 0 {
		return bad("banks", "at least one bank is required")
	}
	seen := map[string]bool{}
	for i, b := range c.Banks {
		p := fmt.Sprintf("banks[%d]", i)
		switch {
		case b.BankID == "":
			return bad(p+".bank_id", "missing")
		case seen[b.BankID]:
			return bad(p+".bank_id", "%q is repeated", b.BankID)
		}
		seen[b.BankID] = true
		if _, err := zengin.ParseNameChars(b.ZenginNames); err != nil {
			return bad(p+".zengin_names", "%v", err)
		}
		if b.CustodyAccount != "" && !slices.ContainsFunc(b.Accounts, func(a Account) bool { return a.Hash == b.CustodyAccount }) {
			return bad(p+".custody_account", "%q is not one of the bank's accounts", b.CustodyAccount)
		}
	}
	for i, k := range c.APIKeys {
		p := fmt.Sprintf("api_keys[%d]", i)
		if k.Current == "" {
			return bad(p+".current", "api key %q has no current secret", k.Name)
		}
		if k.Scope != signing.ScopeOperator && k.Scope != signing.ScopeParticipant {
			return bad(p+".scope", "api key %q: scope must be OPERATOR or PARTICIPANT", k.Name)
		}
		if k.Scope == signing.ScopeParticipant && !seen[k.BankID] {
			return bad(p+".bank_id", "api key %q names unknown bank %q", k.Name, k.BankID)
		}
	}
	if err := c.validateMQ(bad); err != nil {
		return err
	}
	if err := c.validateStore(bad); err != nil {
		return err
	}
	if k := c.Kafka; k != nil && len(k.Brokers) == 0 && (k.DefaultTopic != "" || len(k.Topics) > 0) {
		return bad("kafka.brokers", "topics are configured but no broker: events would never be published")
	}
	if k := c.Kafka; k != nil && k.CreateTopics != nil {
		switch ct := k.CreateTopics; {
		case len(k.Brokers) == 0:
			return bad("kafka.brokers", "create_topics is set but no broker: no topic would be created")
		case ct.Partitions < 1:
			return bad("kafka.create_topics.partitions", "missing or below 1: the partition count of each topic created")
		case ct.Replication < 1:
			return bad("kafka.create_topics.replication", "missing or below 1: the replication factor of each topic created")
		}
	}
	return nil
}

// KeyFor returns the current API key of a participant bank ("" if none).
func (c Config) KeyFor(bankID string) string {
	for _, k := range c.APIKeys {
		if k.Scope == signing.ScopeParticipant && k.BankID == bankID {
			return k.Current
		}
	}
	return ""
}

// OperatorKey returns the current key of the first operator ("" if none).
func (c Config) OperatorKey() string {
	for _, k := range c.APIKeys {
		if k.Scope == signing.ScopeOperator {
			return k.Current
		}
	}
	return ""
}

func (c Config) apiKeys() *signing.APIKeys {
	out := &signing.APIKeys{}
	for _, k := range c.APIKeys {
		out.Keys = append(out.Keys, signing.APIKey{Principal: signing.Principal{Scope: k.Scope, BankID: k.BankID, Name: k.Name}, Secret: k.rotating()})
	}
	return out
}
