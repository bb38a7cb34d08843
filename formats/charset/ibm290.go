package charset

// ibm290 is Japanese EBCDIC katakana, CCSID 290 as used for the single-byte
// half of CCSID 930 (katakana in the upper rows, lower-case Latin in the
// holes 0x62–0xB9). Controls 0x00–0x3F and 0xFF are left unmapped (-1): a
// record never carries them. Checked byte by byte against iconv's IBM930
// (and its IBM290, which names the same positions with full-width katakana)
// by TestIBM290AgainstIconv using fixtures/ebcdic.
var ibm290 = [256]rune{
	// 0x00–0x3F: controls
	u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u,
	u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u,
	u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u,
	u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u,
	// 0x40: sp ｡ ｢ ｣ ､ ･ ｦ ｧ ｨ ｩ £ . < ( + |
	' ', 0xFF61, 0xFF62, 0xFF63, 0xFF64, 0xFF65, 0xFF66, 0xFF67, 0xFF68, 0xFF69, 0x00A3, '.', '<', '(', '+', '|',
	// 0x50: & ｪ ｫ ｬ ｭ ｮ ｯ - ｰ - ! ¥ * ) ; ¬
	'&', 0xFF6A, 0xFF6B, 0xFF6C, 0xFF6D, 0xFF6E, 0xFF6F, u, 0xFF70, u, '!', 0x00A5, '*', ')', ';', 0x00AC,
	// 0x60: - / a b c d e f g h - , % _ > ?
	'-', '/', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', u, ',', '%', '_', '>', '?',
	// 0x70: [ i j k l m n o p ` : # @ ' = "
	'[', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', '`', ':', '#', '@', '\'', '=', '"',
	// 0x80: ] ｱ ｲ ｳ ｴ ｵ ｶ ｷ ｸ ｹ ｺ q ｻ ｼ ｽ ｾ
	']', 0xFF71, 0xFF72, 0xFF73, 0xFF74, 0xFF75, 0xFF76, 0xFF77, 0xFF78, 0xFF79, 0xFF7A, 'q', 0xFF7B, 0xFF7C, 0xFF7D, 0xFF7E,
	// 0x90: ｿ ﾀ ﾁ ﾂ ﾃ ﾄ ﾅ ﾆ ﾇ ﾈ ﾉ r - ﾊ ﾋ ﾌ
	0xFF7F, 0xFF80, 0xFF81, 0xFF82, 0xFF83, 0xFF84, 0xFF85, 0xFF86, 0xFF87, 0xFF88, 0xFF89, 'r', u, 0xFF8A, 0xFF8B, 0xFF8C,
	// 0xA0: ~ ‾ ﾍ ﾎ ﾏ ﾐ ﾑ ﾒ ﾓ ﾔ ﾕ s ﾖ ﾗ ﾘ ﾙ
	'~', 0x203E, 0xFF8D, 0xFF8E, 0xFF8F, 0xFF90, 0xFF91, 0xFF92, 0xFF93, 0xFF94, 0xFF95, 's', 0xFF96, 0xFF97, 0xFF98, 0xFF99,
	// 0xB0: ^ ¢ \ t u v w x y z ﾚ ﾛ ﾜ ﾝ ﾞ ﾟ
	'^', 0x00A2, '\\', 't', 'u', 'v', 'w', 'x', 'y', 'z', 0xFF9A, 0xFF9B, 0xFF9C, 0xFF9D, 0xFF9E, 0xFF9F,
	// 0xC0: { A–I
	'{', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', u, u, u, u, u, u,
	// 0xD0: } J–R
	'}', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', u, u, u, u, u, u,
	// 0xE0: $ S–Z
	'$', u, 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', u, u, u, u, u, u,
	// 0xF0: 0–9
	'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', u, u, u, u, u, u,
}

const u = -1
