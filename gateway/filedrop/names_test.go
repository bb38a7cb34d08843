package filedrop

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/formats/zengin"
)

// One function maps a bank id to its folder and refuses anything that is
// not a 3-digit bank id, so no id reaches outside <root>/banks.
func TestBankDirRefusesAnythingButABankID(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	if dir, err := BankDir(root, "001"); err != nil || dir != filepath.Join(root, "banks", "001") {
		t.Fatalf("BankDir(001) = %q, %v", dir, err)
	}
	for _, id := range []string{"../../x", "..", "/etc", "0/1", "00a", "1", "0001", "", "001\n", "００１"} {
		if _, err := BankDir(root, id); err == nil {
			t.Errorf("BankDir(%q) accepted", id)
		}
	}
	f := newFixture(t, nil)
	cfg := f.cfg
	cfg.Banks = []Bank{{ID: "../../x"}}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "is not 3 digits") {
		t.Fatalf("New with ../../x: %v", err)
	}
	if exists(filepath.Join(f.dir, "x")) || exists(filepath.Join(filepath.Dir(f.dir), "x")) {
		t.Fatal("a folder was created outside the data folder")
	}
}

// logLines collects the processor's JSON log lines.
type logLines struct{ bytes.Buffer }

func (l *logLines) count(event string) int { return strings.Count(l.String(), `"msg":"`+event+`"`) }

// An inbound file whose name cannot be processed (too long for the
// processing name, or a control character) is moved to error/ under a
// safe name with a report for the bank, recorded REJECTED and logged
// once; it is not retried every pass.
func TestUnprocessableInboundNamesGoToErrorOnce(t *testing.T) {
	var logs logLines
	f := newFixture(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(1))
	long := strings.Repeat("L", 240) + ".txt"
	in := f.folders().Inbound
	for _, name := range []string{long, "PAY\n2026.txt"} {
		must(t, os.WriteFile(filepath.Join(in, name), data, 0o644))
	}
	// No done-marker: taken once stable for StableFor.
	f.poll()
	f.clk.Advance(11 * time.Second)
	pass := f.poll()
	if pass.Rejected != 2 || pass.Accepted != 0 {
		t.Fatalf("pass %+v", pass)
	}
	for range 5 {
		f.clk.Advance(11 * time.Second)
		f.poll()
	}
	if got := f.files(in); len(got) != 0 {
		t.Fatalf("inbound still holds %q", got)
	}
	errDir := f.folders().Error
	files := f.files(errDir)
	if len(files) != 4 {
		t.Fatalf("error/ holds %q, want two files and two reports", files)
	}
	for _, name := range files {
		if len(name) > 100 || !strings.Contains(name, "_refused-name-") {
			t.Fatalf("unsafe name in error/: %q", name)
		}
	}
	reports := ""
	for _, name := range files {
		if strings.HasSuffix(name, reportSuffix) {
			b, err := os.ReadFile(filepath.Join(errDir, name))
			must(t, err)
			reports += string(b)
		} else if b, err := os.ReadFile(filepath.Join(errDir, name)); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("moved file %s differs (%v)", name, err)
		}
	}
	for _, want := range []string{"file name REFUSED, nothing from this file was applied", "it is 244 bytes, the limit is 160",
		`file name: "PAY\n2026.txt"`, "control or format character U+000A at byte 3"} {
		if !strings.Contains(reports, want) {
			t.Fatalf("reports lack %q:\n%s", want, reports)
		}
	}
	if n := f.count(`SELECT COUNT(*) FROM FileDrops WHERE status = 'REJECTED' AND processing_name LIKE '%_refused-name-%'`); n != 2 {
		t.Fatalf("REJECTED rows = %d", n)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 0 {
		t.Fatalf("transfers = %d", n)
	}
	if n, failed := logs.count("filedrop.name_refused"), logs.count("filedrop.file_failed"); n != 2 || failed != 0 {
		t.Fatalf("name_refused logged %d times, file_failed %d times:\n%s", n, failed, logs.String())
	}
}

// A dropped file that is not a Zengin file is refused with a report that
// quotes none of its bytes.
func TestNotZenginInboundReportQuotesNoBytes(t *testing.T) {
	f := newFixture(t, nil)
	secret := []byte("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
	f.drop("passwd", secret)
	if pass := f.poll(); pass.Rejected != 1 {
		t.Fatalf("pass %+v", pass)
	}
	errDir := f.folders().Error
	var report []byte
	for _, name := range f.files(errDir) {
		if strings.HasSuffix(name, reportSuffix) {
			var err error
			report, err = os.ReadFile(filepath.Join(errDir, name))
			must(t, err)
		}
	}
	if !bytes.Contains(report, []byte("record 1 line 1 offset 0 col 1 [zengin]: invalid value: not a Zengin file")) ||
		bytes.Contains(report, []byte("root")) || bytes.Contains(report, []byte(": bytes")) {
		t.Fatalf("report:\n%s", report)
	}
}

// SubmitFile validates the source where it is: a file that is not a
// Zengin file, or an invalid one, is refused and nothing is copied into
// the bank's folders or recorded; a name the drop cannot process too.
func TestSubmitFileValidatesBeforeCopying(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	must(t, os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644))
	bad := zenginFile(t, zengin.KindTransfer, "0001", recs(1))
	copy(bad[122+80:], "00000001X0")
	badPath := filepath.Join(dir, "BAD.txt")
	must(t, os.WriteFile(badPath, bad, 0o644))
	longPath := filepath.Join(dir, strings.Repeat("n", 200))
	must(t, os.WriteFile(longPath, zenginFile(t, zengin.KindTransfer, "0001", recs(1)), 0o644))

	var invalid *InvalidFileError
	_, err := f.p.SubmitFile(f.ctx, "001", passwd)
	if !errors.As(err, &invalid) || !invalid.NotZengin || len(invalid.Errs.Errs) != 1 || invalid.Errs.Errs[0].Bytes != nil {
		t.Fatalf("passwd: %v", err)
	}
	_, err = f.p.SubmitFile(f.ctx, "001", badPath)
	if !errors.As(err, &invalid) || invalid.NotZengin || invalid.Errs.Errs[0].Offset != 122+88 {
		t.Fatalf("BAD.txt: %v", err)
	}
	var nameErr *NameError
	if _, err := f.p.SubmitFile(f.ctx, "001", longPath); !errors.As(err, &nameErr) {
		t.Fatalf("long name: %v", err)
	}
	fs := f.folders()
	for _, d := range []string{fs.Processing, fs.Processed, fs.Error, fs.Outbound} {
		if got := f.files(d); len(got) != 0 {
			t.Fatalf("%s holds %q", d, got)
		}
	}
	if n := f.count(`SELECT COUNT(*) FROM FileDrops`); n != 0 {
		t.Fatalf("FileDrops rows = %d", n)
	}
}

// The name character set is a per-bank option: a bank configured with
// long-vowel names gets a file with ｰ applied and its result written with
// it; the default (strict) refuses it with the position.
func TestNamesArePerBank(t *testing.T) {
	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	w.Names = zengin.NamesLongVowel
	must(t, w.WriteHeader(&zengin.Header{Kind: zengin.KindCivilSalary, ClientCode: "1", ClientName: "ｶ)ｽｰﾊﾟｰ", Date: zengin.Date{Month: 12, Day: 3},
		BankCode: "0001", BranchCode: "001", AccountType: 1, AccountNumber: "1234567"}))
	must(t, w.WriteData(&zengin.PayrollData{Account: zengin.Account{BankCode: "0002", BranchCode: "002", AccountType: 4,
		AccountNumber: "7654321", Name: "ｽｰﾊﾟｰ ﾀﾛｳ"}, Amount: 5000}))
	must(t, w.WriteTrailer())
	must(t, w.WriteEnd())
	must(t, w.Flush())

	strict := newFixture(t, nil)
	strict.drop("LV.txt", buf.Bytes())
	if pass := strict.poll(); pass.Rejected != 1 {
		t.Fatalf("strict bank: %+v", pass)
	}
	report, err := os.ReadFile(filepath.Join(strict.folders().Error, strict.drops()[0].ReportName))
	must(t, err)
	if !bytes.Contains(report, []byte("record 1 line 1 offset 17 col 18 [zengin.header ClientName (委託者名)]: character not allowed")) ||
		!bytes.Contains(report, []byte("long-vowel name set")) {
		t.Fatalf("strict report:\n%s", report)
	}

	lv := newFixture(t, func(c *Config) { c.Banks[0].Names = zengin.NamesLongVowel })
	lv.drop("LV.txt", buf.Bytes())
	if pass := lv.poll(); pass.Accepted != 1 {
		t.Fatalf("long-vowel bank: %+v", pass)
	}
	d := lv.drops()[0]
	lv.decide(TxID(d.SHA256, 2), true, "")
	if pass := lv.poll(); pass.Results != 1 {
		t.Fatalf("result pass %+v", pass)
	}
	res, err := os.ReadFile(filepath.Join(lv.folders().Outbound, d.ProcessingName+ResultSuffix))
	must(t, err)
	// The payee's name keeps its ｰ; its 貯蓄 (4) account is 9 in the
	// 口座振替 result layout; 振替結果コード 0.
	if got := string(res[122+50 : 122+60]); got != "\xbd\xb0\xca\xdf\xb0 \xc0\xdb\xb3 " {
		t.Fatalf("result name bytes %q", got)
	}
	if res[122+42] != '9' || res[122+111] != '0' {
		t.Fatalf("result 預金種目 %q, 振替結果コード %q", res[122+42], res[122+111])
	}
	if _, err := zengin.ValidateOptions(bytes.NewReader(res), zengin.Options{Names: zengin.NamesLongVowel}); err != nil {
		t.Fatalf("result file: %v", err)
	}
	// 公務員 給与 (71) is a SALARY transfer, like 給与 (11).
	if n := lv.count(`SELECT COUNT(*) FROM Transactions WHERE purpose = 'SALARY'`); n != 1 {
		t.Fatalf("SALARY transfers = %d", n)
	}
}
