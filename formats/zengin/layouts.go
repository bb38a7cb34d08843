package zengin

import (
	"fmt"

	"github.com/zcgw/zcgw/formats/fixed"
)

// RecordLen is the length of every Zengin record, without separator.
const RecordLen = 120

// Field shorthands for the layout tables below.
func n(name, label string, start, length int) fixed.Field {
	return fixed.Field{Name: name, Label: label, Start: start, Len: length, Type: fixed.N}
}
func k(name, label string, start, length int) fixed.Field {
	return fixed.Field{Name: name, Label: label, Start: start, Len: length, Type: fixed.K}
}
func c(name, label string, start int, value string) fixed.Field {
	return fixed.Field{Name: name, Label: label, Start: start, Len: len(value), Type: fixed.N, Const: value}
}
func dummy(start, length int) fixed.Field {
	return fixed.Field{Name: fmt.Sprintf("Dummy%d", start), Label: "ダミー", Start: start, Len: length, Type: fixed.Filler}
}

// The record layouts, as published by the banks cited in
// docs/formats/zengin.md. Positions are 1-based. Each is declared once
// here; validation, decoding, encoding and the documentation use them.
var (
	// HeaderLayout is the header record (データ区分 1), the same for
	// 総合振込, 給与/賞与 (民間 and 公務員) and 口座振替.
	HeaderLayout = mustLayout("zengin.header", "ヘッダー・レコード (データ区分=1): 総合振込, 給与/賞与, 口座振替",
		c("RecordType", "データ区分", 1, "1"),
		n("Kind", "種別コード: 21 総合振込, 11 給与, 12 賞与, 71 給与 (公務員), 72 賞与 (公務員), 91 口座振替", 2, 2),
		n("CodeType", "コード区分: 0 JIS (Shift_JIS), 1 EBCDIC (CCSID 290)", 4, 1),
		n("ClientCode", "委託者コード (振込依頼人コード)", 5, 10),
		k("ClientName", "委託者名 (振込依頼人名)", 15, 40),
		n("Date", "振込指定日 / 引落日 (MMDD)", 55, 4),
		n("BankCode", "仕向銀行番号 (口座振替: 取引銀行番号)", 59, 4),
		k("BankName", "仕向銀行名", 63, 15),
		n("BranchCode", "仕向支店番号", 78, 3),
		k("BranchName", "仕向支店名", 81, 15),
		n("AccountType", "預金種目 (依頼人): 1 普通, 2 当座, 9 その他", 96, 1),
		n("AccountNumber", "口座番号 (依頼人)", 97, 7),
		dummy(104, 17),
	)

	// TransferDataLayout is the data record (データ区分 2) of 総合振込
	// (種別コード 21). When IDFlag is "Y", bytes 92–111 are one EDI field
	// (EDI情報, C(20)) instead of CustomerCode1/2.
	TransferDataLayout = mustLayout("zengin.data.transfer", "データ・レコード (データ区分=2), 総合振込 (種別コード 21)",
		append(accountFields("被仕向銀行番号", "被仕向銀行名", "被仕向支店番号", "被仕向支店名", "受取人名", "振込金額", accountTypeTransfer),
			n("CustomerCode1", "顧客コード1 (識別表示=Y のとき 92–111 は EDI情報 C(20))", 92, 10),
			n("CustomerCode2", "顧客コード2", 102, 10),
			n("TransferMode", "振込指定区分: 7 電信, 8 文書 (空白可)", 112, 1),
			k("IDFlag", "識別表示: Y (EDI情報) または空白", 113, 1),
			dummy(114, 7),
		)...,
	)

	// TransferEDIDataLayout is the 総合振込 data record when IDFlag is "Y":
	// bytes 92–111 carry EDI情報 (C(20)) for the payee, in the EDI
	// character set (the name set plus ｢ ｣ ¥ , ' + : ?).
	TransferEDIDataLayout = mustLayout("zengin.data.transfer.edi", "データ・レコード (データ区分=2), 総合振込, 識別表示=Y (EDI情報)",
		append(accountFields("被仕向銀行番号", "被仕向銀行名", "被仕向支店番号", "被仕向支店名", "受取人名", "振込金額", accountTypeTransfer),
			k("EDI", "EDI情報 (文字: 名前の文字に加えて ｢ ｣ ¥ , ' + : ?)", 92, 20),
			n("TransferMode", "振込指定区分: 7 電信, 8 文書 (空白可)", 112, 1),
			k("IDFlag", "識別表示: Y", 113, 1),
			dummy(114, 7),
		)...,
	)

	// PayrollDataLayout is the data record of 給与/賞与 (種別コード 11, 12,
	// and 71, 72 for 公務員).
	PayrollDataLayout = mustLayout("zengin.data.payroll", "データ・レコード (データ区分=2), 給与/賞与 (種別コード 11, 12, 71, 72)",
		append(accountFields("被仕向銀行番号", "被仕向銀行名", "被仕向支店番号", "被仕向支店名", "受取人名", "振込金額", accountTypeTransfer),
			n("EmployeeNumber", "社員番号", 92, 10),
			n("DepartmentCode", "所属コード", 102, 10),
			dummy(112, 9),
		)...,
	)

	// DebitDataLayout is the data record of 口座振替 (種別コード 91),
	// requests and results.
	DebitDataLayout = mustLayout("zengin.data.debit", "データ・レコード (データ区分=2), 口座振替 (種別コード 91)",
		append(accountFields("引落銀行番号", "引落銀行名", "引落支店番号", "引落支店名", "預金者名", "引落金額", accountTypeDebit),
			n("CustomerNumber", "顧客番号", 92, 20),
			n("Result", "振替結果コード: 0 振替済 (依頼では 0), 1 資金不足, 2 預金取引なし, 3 預金者都合による振替停止, 4 預金口座振替依頼書なし, 8 委託者都合による振替停止, 9 その他", 112, 1),
			dummy(113, 8),
		)...,
	)

	// TrailerLayout is the trailer record (データ区分 8) of 総合振込 and
	// 給与/賞与.
	TrailerLayout = mustLayout("zengin.trailer", "トレーラ・レコード (データ区分=8), 総合振込, 給与/賞与",
		c("RecordType", "データ区分", 1, "8"),
		n("Count", "合計件数", 2, 6),
		n("Total", "合計金額", 8, 12),
		dummy(20, 101),
	)

	// DebitTrailerLayout is the trailer record of 口座振替. In a request
	// the 振替済 and 振替不能 fields are zero.
	DebitTrailerLayout = mustLayout("zengin.trailer.debit", "トレーラ・レコード (データ区分=8), 口座振替",
		c("RecordType", "データ区分", 1, "8"),
		n("Count", "合計件数", 2, 6),
		n("Total", "合計金額", 8, 12),
		n("DoneCount", "振替済件数", 20, 6),
		n("DoneAmount", "振替済金額", 26, 12),
		n("FailedCount", "振替不能件数", 38, 6),
		n("FailedAmount", "振替不能金額", 44, 12),
		dummy(56, 65),
	)

	// EndLayout is the end record (データ区分 9).
	EndLayout = mustLayout("zengin.end", "エンド・レコード (データ区分=9)",
		c("RecordType", "データ区分", 1, "9"),
		dummy(2, 119),
	)
)

// The 預金種目 of a data record, by layout: 総合振込 and 給与/賞与 pay into
// 1 普通, 2 当座, 4 貯蓄, 9 その他; 口座振替 debits 1 普通, 2 当座,
// 3 納税準備預金, 9 その他.
const (
	accountTypeTransfer = "預金種目: 1 普通, 2 当座, 4 貯蓄, 9 その他"
	accountTypeDebit    = "預金種目: 1 普通, 2 当座, 3 納税準備預金, 9 その他"
)

// accountFields are bytes 1–91 of every data record. 総合振込 and 給与
// carry 手形交換所番号 at 39–42; 口座振替 (accountType accountTypeDebit)
// has a ダミー there.
func accountFields(bank, bankName, branch, branchName, name, amount string, accountType string) []fixed.Field {
	clearing := accountType != accountTypeDebit
	f := []fixed.Field{
		c("RecordType", "データ区分", 1, "2"),
		n("BankCode", bank, 2, 4),
		k("BankName", bankName, 6, 15),
		n("BranchCode", branch, 21, 3),
		k("BranchName", branchName, 24, 15),
	}
	if clearing {
		f = append(f, n("ClearingHouse", "手形交換所番号 (未使用, 0 または空白)", 39, 4))
	} else {
		f = append(f, dummy(39, 4))
	}
	return append(f,
		n("AccountType", accountType, 43, 1),
		n("AccountNumber", "口座番号", 44, 7),
		k("Name", name, 51, 30),
		n("Amount", amount, 81, 10),
		n("NewCode", "新規コード: 0 その他, 1 第1回, 2 変更分", 91, 1),
	)
}

// titles holds each layout's one-line description, for the documentation.
var titles = map[*fixed.Layout]string{}

func mustLayout(name, title string, fields ...fixed.Field) *fixed.Layout {
	l := fixed.MustLayout(name, RecordLen, fields...)
	titles[l] = title
	return l
}

// Title is the one-line description of a Zengin layout ("" for others).
func Title(l *fixed.Layout) string { return titles[l] }

// optionalNumeric lists the numeric fields a bank may leave blank (all
// spaces) instead of zero-filled: the fields the published specifications
// mark as optional (任意, 省略時はスペース).
var optionalNumeric = map[string]bool{
	"ClearingHouse":  true,
	"CustomerCode1":  true,
	"CustomerCode2":  true,
	"TransferMode":   true,
	"EmployeeNumber": true,
	"DepartmentCode": true,
	"CustomerNumber": true,
	"NewCode":        true,
}

// Layouts returns every Zengin layout, in file order, for documentation.
func Layouts() []*fixed.Layout {
	return []*fixed.Layout{HeaderLayout, TransferDataLayout, TransferEDIDataLayout, PayrollDataLayout, DebitDataLayout, TrailerLayout, DebitTrailerLayout, EndLayout}
}
