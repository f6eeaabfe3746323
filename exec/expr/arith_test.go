package expr

import "testing"

// Expected values are PostgreSQL 15's.

func TestArith(t *testing.T) {
	a := ints(`[7, -7, 7, -7, null, 0]`)
	b := ints(`[2, 2, -2, -2, 1, 5]`)
	ia, ib := col(0, tInt), col(1, tInt)
	runEvalTests(t, []evalTest{
		{name: "int add", e: fn("+", ia, ib), cols: []column{a, b}, want: []string{"9", "-5", "5", "-9", "NULL", "5"}},
		{name: "int sub", e: fn("-", ia, ib), cols: []column{a, b}, want: []string{"5", "-9", "9", "-5", "NULL", "-5"}},
		{name: "int mul", e: fn("*", ia, ib), cols: []column{a, b}, want: []string{"14", "-14", "-14", "14", "NULL", "0"}},
		{name: "int div truncates", e: fn("/", ia, ib), cols: []column{a, b}, want: []string{"3", "-3", "-3", "3", "NULL", "0"}},
		{name: "int mod sign of dividend", e: fn("%", ia, ib), cols: []column{a, b}, want: []string{"1", "-1", "1", "-1", "NULL", "0"}},
		{name: "mod function", e: fn("mod", ia, ib), cols: []column{a, b}, want: []string{"1", "-1", "1", "-1", "NULL", "0"}},
		{name: "int plus literal", e: fn("+", ia, lInt(1)), cols: []column{a}, want: []string{"8", "-6", "8", "-6", "NULL", "1"}},
		{name: "div by zero", e: fn("/", ia, ib), cols: []column{ints(`[1, 2]`), ints(`[1, 0]`)}, err: "division by zero"},
		{name: "mod by zero", e: fn("%", ia, ib), cols: []column{ints(`[1, 2]`), ints(`[1, 0]`)}, err: "division by zero"},
		{name: "NULL / 0 is NULL", e: fn("/", ia, ib), cols: []column{ints(`[null, 4, null]`), ints(`[0, 2, 0]`)}, want: []string{"NULL", "2", "NULL"}},
		{name: "add overflow", e: fn("+", ia, lInt(1)), cols: []column{ints(`[9223372036854775807]`)}, err: "bigint out of range"},
		{name: "overflow in NULL row ignored", e: fn("+", ia, ib), cols: []column{ints(`[1, null, 1]`), ints(`[1, 9223372036854775807, 1]`)}, want: []string{"2", "NULL", "2"}},
		{name: "mul overflow", e: fn("*", ia, lInt(2)), cols: []column{ints(`[4611686018427387904]`)}, err: "bigint out of range"},
		{name: "mul negative no overflow", e: fn("*", ia, lInt(-2)), cols: []column{ints(`[4611686018427387904]`)}, want: []string{"-9223372036854775808"}},
		{name: "min div -1", e: fn("/", ia, lInt(-1)), cols: []column{ints(`[-9223372036854775808]`)}, err: "bigint out of range"},
		{name: "min mod -1", e: fn("%", ia, lInt(-1)), cols: []column{ints(`[-9223372036854775808]`)}, want: []string{"0"}},
		{name: "sub overflow", e: fn("-", lInt(-2), ia), cols: []column{ints(`[9223372036854775807]`)}, err: "bigint out of range"},

		{name: "float div", e: fn("/", col(0, tF), lF(4)), cols: []column{floats(`[1, -3, null]`)}, want: []string{"0.25", "-0.75", "NULL"}},
		{name: "float plus int", e: fn("+", col(0, tF), lInt(2)), cols: []column{floats(`[0.5, 1e15]`)}, want: []string{"2.5", "1.000000000000002e+15"}},
		{name: "float overflow", e: fn("*", col(0, tF), lF(1e300)), cols: []column{floats(`[1e300]`)}, err: "value out of range: overflow"},
		{name: "float underflow", e: fn("*", col(0, tF), lF(1e-300)), cols: []column{floats(`[1e-300]`)}, err: "value out of range: underflow"},
		{name: "float div zero", e: fn("/", col(0, tF), lF(0)), cols: []column{floats(`[1]`)}, err: "division by zero"},
		{name: "float mod", e: fn("%", col(0, tF), lF(2)), cols: []column{floats(`[5.5, -5.5]`)}, want: []string{"1.5", "-1.5"}},

		{name: "decimal add", e: fn("+", col(0, dec(5, 2)), col(1, dec(5, 2))), cols: []column{decs(5, 2, `["1.50", "-2.25", null]`), decs(5, 2, `["2.25", "1.00", "1"]`)}, want: []string{"3.75", "-1.25", "NULL"}},
		{name: "decimal plus int", e: fn("+", col(0, dec(5, 2)), lInt(1)), cols: []column{decs(5, 2, `["1.50", "-2.25"]`)}, want: []string{"2.50", "-1.25"}},
		{name: "decimal scales align", e: fn("-", col(0, dec(5, 2)), lDec("0.125", 4, 3)), cols: []column{decs(5, 2, `["1.50"]`)}, want: []string{"1.375"}},
		{name: "decimal mul", e: fn("*", col(0, dec(5, 2)), col(0, dec(5, 2))), cols: []column{decs(5, 2, `["1.50", "-0.10"]`)}, want: []string{"2.2500", "0.0100"}},
		{name: "decimal div rounds half away", e: fn("/", col(0, dec(5, 2)), lDec("3.00", 3, 2)), cols: []column{decs(5, 2, `["1.00", "2.00", "-2.00", "0"]`)}, want: []string{"0.3333333333333333", "0.6666666666666667", "-0.6666666666666667", "0.0000000000000000"}},
		{name: "decimal div by zero", e: fn("/", col(0, dec(5, 2)), lDec("0", 3, 2)), cols: []column{decs(5, 2, `["1.00"]`)}, err: "division by zero"},
		{name: "decimal mod", e: fn("%", col(0, dec(5, 2)), lInt(2)), cols: []column{decs(5, 2, `["7.50", "-7.50"]`)}, want: []string{"1.50", "-1.50"}},
		{name: "decimal overflow at 38 digits", e: fn("*", col(0, dec(38, 0)), col(0, dec(38, 0))), cols: []column{decs(38, 0, `["10000000000000000000000"]`)}, err: "numeric field overflow"},
		{name: "big decimal add", e: fn("+", col(0, dec(30, 2)), col(0, dec(30, 2))), cols: []column{decs(30, 2, `["1234567890123456789012345.67"]`)}, want: []string{"2469135780246913578024691.34"}},
		{name: "big decimal div", e: fn("/", col(0, dec(30, 2)), lDec("3", 1, 0)), cols: []column{decs(30, 2, `["12345678901234567890.67"]`)}, want: []string{"4115226300411522630.2233333333333333"}},
		{name: "decimal div past 22 integer digits", e: fn("/", col(0, dec(30, 2)), lDec("3", 1, 0)), cols: []column{decs(30, 2, `["1234567890123456789012345.67"]`)}, err: "numeric field overflow"},

		{name: "decimal mul rounds to a capped scale", e: fn("*", col(0, dec(30, 20)), col(0, dec(30, 20))), cols: []column{decs(30, 20, `["1.00000000000000000250", "-1.5"]`)},
			want: []string{"1.00000000000000001", "2.25000000000000000"}},
		{name: "decimal add rounds to a capped scale", e: fn("+", col(0, dec(38, 10)), lDec("0.00000000005", 38, 11)), cols: []column{decs(38, 10, `["1.0000000000", "-1.0000000000"]`)},
			want: []string{"1.000000000", "-1.000000000"}},
		{name: "neg", e: fn("neg", ia), cols: []column{ints(`[5, -5, null]`)}, want: []string{"-5", "5", "NULL"}},
		{name: "neg overflow", e: fn("neg", ia), cols: []column{ints(`[-9223372036854775808]`)}, err: "bigint out of range"},
		{name: "abs", e: fn("abs", ia), cols: []column{ints(`[5, -5, null]`)}, want: []string{"5", "5", "NULL"}},
		{name: "abs decimal", e: fn("abs", col(0, dec(3, 1))), cols: []column{decs(3, 1, `["-2.5", "2.5"]`)}, want: []string{"2.5", "2.5"}},
		{name: "neg float", e: fn("neg", col(0, tF)), cols: []column{floats(`[1.5, null]`)}, want: []string{"-1.5", "NULL"}},
	})
}

func TestRounding(t *testing.T) {
	d := col(0, dec(6, 4))
	runEvalTests(t, []evalTest{
		{name: "round decimal half away", e: fn("round", col(0, dec(2, 1))), cols: []column{decs(2, 1, `["2.5", "-2.5", "0.4", null]`)}, want: []string{"3", "-3", "0", "NULL"}},
		{name: "round decimal places", e: fn("round", d, lInt(2)), cols: []column{decs(6, 4, `["1.2345", "1.2350", "-1.2350", "99.9950"]`)}, want: []string{"1.2300", "1.2400", "-1.2400", "100.0000"}},
		{name: "round decimal negative places", e: fn("round", col(0, dec(5, 1)), lInt(-2)), cols: []column{decs(5, 1, `["1234.5", "1250.0", "-1250.0"]`)}, want: []string{"1200.0", "1300.0", "-1300.0"}},
		{name: "round decimal with capped scale", e: fn("round", col(0, dec(38, 10)), col(1, tInt)), cols: []column{decs(38, 10, `["1.2350000000", "1.2345678915"]`), ints(`[2, 12]`)},
			want: []string{"1.240000000", "1.234567892"}},
		{name: "round double is rint", e: fn("round", col(0, tF)), cols: []column{floats(`[2.5, 3.5, -2.5, 2.6]`)}, want: []string{"2", "4", "-2", "3"}},
		{name: "round double places", e: fn("round", col(0, tF), lInt(1)), cols: []column{floats(`[1.26, -1.24]`)}, want: []string{"1.3", "-1.2"}},
		{name: "round int", e: fn("round", col(0, tInt), lInt(-2)), cols: []column{ints(`[1250, -1250, 1249, 7]`)}, want: []string{"1300", "-1300", "1200", "0"}},
		{name: "round int identity", e: fn("round", col(0, tInt)), cols: []column{ints(`[7, null]`)}, want: []string{"7", "NULL"}},
		{name: "floor decimal", e: fn("floor", col(0, dec(2, 1))), cols: []column{decs(2, 1, `["2.5", "-2.5", "-2.0"]`)}, want: []string{"2", "-3", "-2"}},
		{name: "ceil decimal", e: fn("ceil", col(0, dec(2, 1))), cols: []column{decs(2, 1, `["2.5", "-2.5", "2.0"]`)}, want: []string{"3", "-2", "2"}},
		{name: "floor double", e: fn("floor", col(0, tF)), cols: []column{floats(`[2.5, -2.5]`)}, want: []string{"2", "-3"}},
		{name: "ceiling double", e: fn("ceiling", col(0, tF)), cols: []column{floats(`[2.1, -2.5]`)}, want: []string{"3", "-2"}},
	})
}
