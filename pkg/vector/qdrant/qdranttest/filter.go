package qdranttest

import (
	"strings"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// matchFilter applies Qdrant's filter semantics: every must condition, at
// least one should condition (when there are any), no must_not condition,
// and min_should's count. A nil filter matches everything.
func matchFilter(f *qdrant.Filter, p *storedPoint) (bool, error) {
	if f == nil {
		return true, nil
	}
	for _, c := range f.GetMust() {
		ok, err := matchCondition(c, p)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, c := range f.GetMustNot() {
		ok, err := matchCondition(c, p)
		if err != nil || ok {
			return false, err
		}
	}
	if len(f.GetShould()) > 0 {
		any := false
		for _, c := range f.GetShould() {
			ok, err := matchCondition(c, p)
			if err != nil {
				return false, err
			}
			any = any || ok
		}
		if !any {
			return false, nil
		}
	}
	if ms := f.GetMinShould(); ms != nil {
		n := uint64(0)
		for _, c := range ms.GetConditions() {
			ok, err := matchCondition(c, p)
			if err != nil {
				return false, err
			}
			if ok {
				n++
			}
		}
		if n < ms.GetMinCount() {
			return false, nil
		}
	}
	return true, nil
}

func matchCondition(c *qdrant.Condition, p *storedPoint) (bool, error) {
	switch v := c.GetConditionOneOf().(type) {
	case *qdrant.Condition_Field:
		return matchField(v.Field, p)
	case *qdrant.Condition_HasId:
		for _, pid := range v.HasId.GetHasId() {
			id, err := parseID(pid)
			if err != nil {
				return false, err
			}
			if id == p.id {
				return true, nil
			}
		}
		return false, nil
	case *qdrant.Condition_Filter:
		return matchFilter(v.Filter, p)
	case *qdrant.Condition_IsEmpty:
		vals, found := lookup(p.payload, v.IsEmpty.GetKey())
		return !found || len(vals) == 0, nil
	case *qdrant.Condition_IsNull:
		vals, found := lookup(p.payload, v.IsNull.GetKey())
		if !found {
			return false, nil
		}
		for _, x := range vals {
			if _, ok := x.GetKind().(*qdrant.Value_NullValue); ok {
				return true, nil
			}
		}
		return false, nil
	case nil:
		return false, status.Error(codes.InvalidArgument, "Wrong input: empty condition")
	}
	return false, status.Errorf(codes.Unimplemented, "qdranttest: condition %T is not implemented by the fake", c.GetConditionOneOf())
}

// matchField supports the match conditions; ranges, geo, datetime and
// values_count are Unimplemented.
func matchField(f *qdrant.FieldCondition, p *storedPoint) (bool, error) {
	if f.GetMatch() == nil || f.Range != nil || f.GeoBoundingBox != nil || f.GeoRadius != nil ||
		f.GeoPolygon != nil || f.ValuesCount != nil || f.DatetimeRange != nil || f.IsEmpty != nil || f.IsNull != nil {
		return false, status.Errorf(codes.Unimplemented, "qdranttest: field condition on %q other than match is not implemented by the fake", f.GetKey())
	}
	vals, _ := lookup(p.payload, f.GetKey())
	anyOf := func(pred func(*qdrant.Value) bool) bool {
		for _, x := range vals {
			if pred(x) {
				return true
			}
		}
		return false
	}
	isString := func(want ...string) func(*qdrant.Value) bool {
		return func(x *qdrant.Value) bool {
			s, ok := x.GetKind().(*qdrant.Value_StringValue)
			if !ok {
				return false
			}
			for _, w := range want {
				if s.StringValue == w {
					return true
				}
			}
			return false
		}
	}
	isInt := func(want ...int64) func(*qdrant.Value) bool {
		return func(x *qdrant.Value) bool {
			n, ok := x.GetKind().(*qdrant.Value_IntegerValue)
			if !ok {
				return false
			}
			for _, w := range want {
				if n.IntegerValue == w {
					return true
				}
			}
			return false
		}
	}
	switch m := f.GetMatch().GetMatchValue().(type) {
	case *qdrant.Match_Keyword:
		return anyOf(isString(m.Keyword)), nil
	case *qdrant.Match_Keywords:
		return anyOf(isString(m.Keywords.GetStrings()...)), nil
	case *qdrant.Match_ExceptKeywords:
		return len(vals) > 0 && !anyOf(isString(m.ExceptKeywords.GetStrings()...)), nil
	case *qdrant.Match_Integer:
		return anyOf(isInt(m.Integer)), nil
	case *qdrant.Match_Integers:
		return anyOf(isInt(m.Integers.GetIntegers()...)), nil
	case *qdrant.Match_Boolean:
		return anyOf(func(x *qdrant.Value) bool {
			b, ok := x.GetKind().(*qdrant.Value_BoolValue)
			return ok && b.BoolValue == m.Boolean
		}), nil
	}
	return false, status.Errorf(codes.Unimplemented, "qdranttest: match %T is not implemented by the fake", f.GetMatch().GetMatchValue())
}

// lookup returns the values at a dotted key path; a list contributes each
// element, as Qdrant matches any element of an array.
func lookup(payload map[string]*qdrant.Value, key string) ([]*qdrant.Value, bool) {
	parts := strings.Split(key, ".")
	cur := []*qdrant.Value{{Kind: &qdrant.Value_StructValue{StructValue: &qdrant.Struct{Fields: payload}}}}
	for _, part := range parts {
		var next []*qdrant.Value
		for _, v := range cur {
			x, ok := v.GetStructValue().GetFields()[part]
			if !ok {
				continue
			}
			if l, ok := x.GetKind().(*qdrant.Value_ListValue); ok {
				next = append(next, l.ListValue.GetValues()...)
			} else {
				next = append(next, x)
			}
		}
		if len(next) == 0 {
			return nil, false
		}
		cur = next
	}
	return cur, true
}
