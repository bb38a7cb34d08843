package corebalance

import (
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/fixedfile"
)

// RecordLen is the length of every record, without separator.
const RecordLen = 100

var format = fixedfile.NewFormat("corebalance", RecordLen)

var (
	x, n, c = fixedfile.X, fixedfile.N, fixedfile.RecordType
	filler  = format.Filler
	layout  = format.Layout
)

// Title is the one-line description of a core balance layout.
func Title(l *fixed.Layout) string { return format.Title(l) }

// The layouts.
var (
	HeaderLayout = layout("corebalance.header", "Header (H)",
		c("レコード区分 H", "H"),
		x("FileType", "ファイル種別: CBAL", 2, 4),
		n("Version", "レイアウト版: 01", 6, 2),
		n("BankCode", "銀行コード (the core's bank)", 8, 4),
		n("BusinessDate", "業務日 YYYYMMDD (JST) whose closing balances the file holds", 12, 8),
		n("CutoffAt", "基準日時 YYYYMMDDhhmmss (JST): every posting the core applied before it is in the balances, none after", 20, 14),
		filler(34),
	)

	DetailLayout = layout("corebalance.detail", "Detail (D): one account's balance at the cutoff",
		c("レコード区分 D", "D"),
		n("Seq", "明細通番: 1, 2, 3 ... without gaps", 2, 8),
		n("BranchCode", "店番", 10, 3),
		n("AccountType", "預金種目: 1 普通, 2 当座, 4 貯蓄, 9 その他", 13, 1),
		n("AccountNumber", "口座番号; details ascend by 店番, 預金種目, 口座番号, no account twice", 14, 7),
		x("Status", "口座状態: O open, C closed", 21, 1),
		n("Balance", "残高 (yen, ledger balance at the cutoff, never negative)", 22, 15),
		filler(37),
	)

	TrailerLayout = layout("corebalance.trailer", "Trailer (T)",
		c("レコード区分 T", "T"),
		n("Count", "明細件数", 2, 8),
		n("BalanceTotal", "残高合計", 10, 18),
		n("HashTotal", "ハッシュ合計: sum of 店番+口座番号 (10 digits) mod 10^15", 28, 15),
		filler(43),
	)
)

// Layouts returns every core balance layout, for documentation.
func Layouts() []*fixed.Layout { return []*fixed.Layout{HeaderLayout, DetailLayout, TrailerLayout} }
