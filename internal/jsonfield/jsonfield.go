// Package jsonfield names a struct's fields by their JSON paths
// ("data.recipe.crop_scale": JSON names, nested structs joined by dots,
// embedded structs inline), the words a configuration's problems use: it
// lists the paths, finds a field by its name and copies fields by path.
package jsonfield

import (
	"reflect"
	"strings"
)

// Paths lists the JSON field paths of the struct type t (embedded structs
// inline), nested structs as a.b, each under prefix.
func Paths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		ft := sf.Type
		if sf.Anonymous && name == "" {
			out = append(out, Paths(ft, prefix)...)
			continue
		}
		p := prefix + name
		out = append(out, p)
		if ft.Kind() == reflect.Struct {
			out = append(out, Paths(ft, p+".")...)
		}
	}
	return out
}

// Copy copies the fields at paths from src to dst (pointers to structs of
// one type, paths by JSON name as Paths gives them). A path that is not a
// field is a panic: the caller's paths are its own.
func Copy(dst, src any, paths []string) {
	for _, p := range paths {
		d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
		for _, name := range strings.Split(p, ".") {
			d, s = ByName(d, name), ByName(s, name)
			if !d.IsValid() {
				panic("jsonfield.Copy: no field " + p)
			}
		}
		d.Set(s)
	}
}

// ByName is v's field of that JSON name, looking into embedded structs
// (the zero Value for none).
func ByName(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		n, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous && n == "" {
			if f := ByName(v.Field(i), name); f.IsValid() {
				return f
			}
			continue
		}
		if n == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}
