package filedrop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
)

// Coordinator is what the file drop needs from the coordinator:
// *orchestrator.Orchestrator implements it.
type Coordinator interface {
	// SubmitBulk accepts many PaymentInitiated (BULK: RECEIVED and parked
	// for their batch window) in one commit, idempotent per key, with the
	// caller's own rows written by then in the same transaction.
	SubmitBulk(ctx context.Context, issuerBankID string, items []orchestrator.BulkItem, then orchestrator.BulkThen) ([]orchestrator.BulkOutcome, error)
	// Query reads a transfer's state and decision (TX_NOT_FOUND when
	// unknown).
	Query(ctx context.Context, txid string) (orchestrator.View, error)
}

// Participants looks a participant up (PARTICIPANT_NOT_FOUND when
// unknown): *participants.Registry implements it.
type Participants interface {
	Get(ctx context.Context, bankID string) (participants.Participant, error)
}

// Bank is one bank that drops files.
type Bank struct {
	// ID is the participant bank_id (the payer of every transfer in its
	// files). Required.
	ID string
	// ZenginCode is the bank's 4-digit 全銀 bank code, which every header's
	// 仕向銀行番号 must carry. Default: ID left-padded with zeros to 4
	// digits ("001" -> "0001").
	ZenginCode string
	// Dir is the bank's base folder. Default BankDir(Config.Root, ID):
	// <Config.Root>/banks/<ID>.
	Dir string
	// Inbound and Outbound override <Dir>/inbound and <Dir>/outbound.
	Inbound, Outbound string
	// Names is the Zengin name character set the bank uses: its files are
	// validated with it and its result files written with it. Default
	// zengin.NamesStrict (ｰ refused); zengin.NamesLongVowel for a bank
	// that writes ｰ in names.
	Names zengin.NameChars
}

// BankIDDigits is the length of a file-drop bank id: the participant
// bank_id, 3 digits ("001"; docs/filedrop.md).
const BankIDDigits = 3

// CheckBankID refuses a bank id that is not BankIDDigits digits: the file
// drop's folders are named by that form, a strict subset of a participant
// bank_id in the one identifier grammar (coordinator/ident.BankID).
func CheckBankID(id string) error {
	if len(id) != BankIDDigits || !allDigits(id) {
		return fmt.Errorf("filedrop: bank id %q is not %d digits", id, BankIDDigits)
	}
	return nil
}

// BankDir is the one mapping from a bank id to its base folder under the
// data folder root: <root>/banks/<id>. It refuses anything that is not a
// bank id (CheckBankID), so no argument can name a folder outside
// <root>/banks (../../x, an absolute path, a separator).
func BankDir(root, id string) (string, error) {
	if err := CheckBankID(id); err != nil {
		return "", err
	}
	if root == "" {
		return "", fmt.Errorf("filedrop: bank %s: no data folder", id)
	}
	return filepath.Join(root, "banks", id), nil
}

// Folders are a bank's folders.
type Folders struct {
	Inbound, Processing, Processed, Error, Outbound string
}

// Folders returns the bank's folders (after Config defaults are applied).
func (b Bank) Folders() Folders {
	f := Folders{
		Inbound:    filepath.Join(b.Dir, "inbound"),
		Processing: filepath.Join(b.Dir, "processing"),
		Processed:  filepath.Join(b.Dir, "processed"),
		Error:      filepath.Join(b.Dir, "error"),
		Outbound:   filepath.Join(b.Dir, "outbound"),
	}
	if b.Inbound != "" {
		f.Inbound = b.Inbound
	}
	if b.Outbound != "" {
		f.Outbound = b.Outbound
	}
	return f
}

// Config wires a Processor.
type Config struct {
	// DB is the coordinator database (store.Schema applied: FileDrops and
	// FileDropRefusals live there). Required.
	DB *store.DB
	// Coordinator accepts and reports transfers. Required.
	Coordinator Coordinator
	// Participants resolves and checks payee banks. Required.
	Participants Participants
	// Root is the data folder; bank folders default to <Root>/banks/<id>.
	Root string
	// Banks are the banks whose folders are served. Required (at least one).
	Banks []Bank
	// Directory maps a 4-digit 全銀 bank code (被仕向銀行番号) to a
	// participant bank_id. Codes not listed resolve to the participant
	// whose bank_id is the code itself, or the code without its leading
	// zero ("0002" -> "002"), whichever exists (the code itself first).
	Directory map[string]string
	// AccountSalt salts the account hashes (see AccountHash). Default
	// DefaultAccountSalt.
	AccountSalt string
	// Accounts are the accounts whose account_hash the operator chose
	// (node.json's banks[].accounts): a record naming one of them is sent
	// with that hash, so a file can pay the accounts the API pays. Every
	// other account is hashed by AccountHash.
	Accounts map[Account]string
	// StableFor is how long a file without a done-marker must keep the
	// same size and mtime before it is taken (clock-driven). Default 10s.
	StableFor time.Duration
	// Chunk is how many data records one commit accepts (one SubmitBulk,
	// which also checkpoints FileDrops.applied_through): default
	// DefaultChunk (docs/filedrop.md has the measurements).
	Chunk int
	// MaxErrors caps the errors listed in a report (default 1000; the
	// rest are counted).
	MaxErrors int
	// Clock is the only time source (nil: clock.System{}).
	Clock clock.Clock
	// Logger receives one JSON line per event (nil: discard).
	Logger *slog.Logger
	// Progress, when set, is called while a file is applied with the data
	// records submitted so far and the file's total.
	Progress func(bankID, file string, done, total int64)
}

// DefaultChunk is the default Config.Chunk: records per commit.
const DefaultChunk = 4096

// DefaultZenginCode is a bank's 4-digit 全銀 bank code when Bank.ZenginCode
// is not set: its bank_id, left-padded with zeros ("001" -> "0001").
func DefaultZenginCode(bankID string) string {
	if len(bankID) >= 4 {
		return bankID
	}
	return strings.Repeat("0", 4-len(bankID)) + bankID
}

// DefaultAccountSalt is the default Config.AccountSalt.
const DefaultAccountSalt = "zcgw-filedrop-v1"

func (c *Config) defaults() error {
	if c.DB == nil || c.Coordinator == nil || c.Participants == nil {
		return errors.New("filedrop: Config.DB, Coordinator and Participants are required")
	}
	if len(c.Banks) == 0 {
		return errors.New("filedrop: Config.Banks is empty")
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.AccountSalt == "" {
		c.AccountSalt = DefaultAccountSalt
	}
	if c.StableFor <= 0 {
		c.StableFor = 10 * time.Second
	}
	if c.Chunk <= 0 {
		c.Chunk = DefaultChunk
	}
	if c.MaxErrors <= 0 {
		c.MaxErrors = 1000
	}
	banks := make([]Bank, len(c.Banks))
	seen := map[string]bool{}
	for i, b := range c.Banks {
		// The ID names the bank's folder (<Root>/banks/<ID>) and is the
		// payer bank_id of every derived transfer.
		if err := CheckBankID(b.ID); err != nil {
			return err
		}
		if seen[b.ID] {
			return fmt.Errorf("filedrop: bank %s configured twice", b.ID)
		}
		seen[b.ID] = true
		if b.ZenginCode == "" {
			b.ZenginCode = DefaultZenginCode(b.ID)
		}
		if len(b.ZenginCode) != 4 || !allDigits(b.ZenginCode) {
			return fmt.Errorf("filedrop: bank %s: ZenginCode %q is not 4 digits", b.ID, b.ZenginCode)
		}
		if b.Dir == "" {
			dir, err := BankDir(c.Root, b.ID)
			if err != nil {
				return err
			}
			b.Dir = dir
		}
		banks[i] = b
	}
	c.Banks = banks
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// The coordinator's own types satisfy the interfaces.
var (
	_ Coordinator  = (*orchestrator.Orchestrator)(nil)
	_ Participants = (*participants.Registry)(nil)
)
