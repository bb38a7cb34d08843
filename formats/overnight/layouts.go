package overnight

import (
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/fixedfile"
)

// RecordLen is the length of every record, without separator.
const RecordLen = 200

var format = fixedfile.NewFormat("overnight", RecordLen)

var (
	x, n, c = fixedfile.X, fixedfile.N, fixedfile.RecordType
	filler  = format.Filler
	layout  = format.Layout
)

// Title is the one-line description of an overnight layout.
func Title(l *fixed.Layout) string { return format.Title(l) }

// The layouts. The header is the same for both files.
var (
	HeaderLayout = layout("overnight.header", "Header (H), posting file and result file",
		c("レコード区分 H", "H"),
		x("FileType", "ファイル種別: POST (posting file) or RSLT (result file)", 2, 4),
		n("Version", "レイアウト版: 01", 6, 2),
		n("BankCode", "銀行コード (the core's bank)", 8, 4),
		n("BusinessDate", "業務日 YYYYMMDD (JST)", 12, 8),
		n("FileSeq", "ファイル通番 for the business date, from 1", 20, 8),
		n("CreatedAt", "作成日時 YYYYMMDDhhmmss (JST)", 28, 14),
		filler(42),
	)

	PostingLayout = layout("overnight.posting", "Detail (D), posting file: one debit, credit or reversal posting",
		c("レコード区分 D", "D"),
		n("Seq", "明細通番: 1, 2, 3 ... without gaps", 2, 8),
		x("Kind", "取引区分: P posting, R reversal", 10, 1),
		x("Side", "貸借区分: D debit (出金), C credit (入金)", 11, 1),
		x("TxID", "zcgw txid (left-justified)", 12, 36),
		x("Ref", "記帳参照番号: the core's idempotency key, unique per posting", 48, 32),
		x("OriginalRef", "取消対象の記帳参照番号 (R only; blank for P)", 80, 32),
		n("BranchCode", "店番", 112, 3),
		n("AccountType", "預金種目: 1 普通, 2 当座, 4 貯蓄, 9 その他", 115, 1),
		n("AccountNumber", "口座番号", 116, 7),
		n("Amount", "金額 (yen, > 0)", 123, 13),
		n("ValueDate", "起算日 YYYYMMDD", 136, 8),
		x("Memo", "摘要 (half-width)", 144, 20),
		filler(164),
	)

	ResultLayout = layout("overnight.result", "Detail (D), result file: the core's answer to one posting, same order",
		c("レコード区分 D", "D"),
		n("Seq", "明細通番 of the posting answered", 2, 8),
		x("Kind", "取引区分 (echo)", 10, 1),
		x("Side", "貸借区分 (echo)", 11, 1),
		x("TxID", "zcgw txid (echo)", 12, 36),
		x("Ref", "記帳参照番号 (echo)", 48, 32),
		n("Code", "結果コード: 00 posted, 01 insufficient funds, 02 no such account, 03 account closed, 04 account frozen, 05 reference already posted, 06 original not found, 07 original already reversed, 99 other", 80, 2),
		x("CoreRef", "勘定系取引番号 (blank unless posted)", 82, 30),
		n("BranchCode", "店番 (echo)", 112, 3),
		n("AccountType", "預金種目 (echo)", 115, 1),
		n("AccountNumber", "口座番号 (echo)", 116, 7),
		n("Amount", "金額 (echo)", 123, 13),
		n("PostedDate", "記帳日 YYYYMMDD (00000000 unless posted)", 136, 8),
		filler(144),
	)

	TrailerLayout = layout("overnight.trailer", "Trailer (T), posting file",
		c("レコード区分 T", "T"),
		n("Count", "明細件数", 2, 8),
		n("DebitCount", "出金件数", 10, 8),
		n("DebitTotal", "出金合計金額", 18, 15),
		n("CreditCount", "入金件数", 33, 8),
		n("CreditTotal", "入金合計金額", 41, 15),
		n("HashTotal", "ハッシュ合計: sum of 店番+口座番号 (10 digits) mod 10^15", 56, 15),
		filler(71),
	)

	ResultTrailerLayout = layout("overnight.result.trailer", "Trailer (T), result file",
		c("レコード区分 T", "T"),
		n("Count", "明細件数 (must equal the posting file's)", 2, 8),
		n("PostedCount", "記帳済件数 (code 00)", 10, 8),
		n("RejectedCount", "不能件数 (other codes)", 18, 8),
		n("DebitTotal", "記帳済出金合計金額", 26, 15),
		n("CreditTotal", "記帳済入金合計金額", 41, 15),
		n("HashTotal", "ハッシュ合計 over all details, as in the posting file", 56, 15),
		filler(71),
	)
)

// Layouts returns every overnight layout, for documentation.
func Layouts() []*fixed.Layout {
	return []*fixed.Layout{HeaderLayout, PostingLayout, TrailerLayout, ResultLayout, ResultTrailerLayout}
}
