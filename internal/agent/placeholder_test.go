package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
)

func TestWithoutImages(t *testing.T) {
	img := model.Part{Type: model.PartImage, MediaType: "image/png", Data: []byte{1}}
	text := func(s string) model.Part { return model.Part{Type: model.PartText, Text: s} }
	msgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Part{text("plain")}},
		{Role: model.RoleUser, Content: []model.Part{text("look"), img, img}},
		{Role: model.RoleUser, Content: []model.Part{img}},
	}
	orig := append([]model.Message(nil), msgs...)
	got := withoutImages(msgs, "(none)")
	want := []model.Message{
		{Role: model.RoleUser, Content: []model.Part{text("plain")}},
		{Role: model.RoleUser, Content: []model.Part{text("look\n(none)\n(none)")}},
		{Role: model.RoleUser, Content: []model.Part{text("(none)")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withoutImages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig, msgs); diff != "" {
		t.Errorf("the history changed (-before +after):\n%s", diff)
	}
	if len(msgs[1].Content) != 3 || msgs[1].Content[0].Text != "look" {
		t.Errorf("the history's message changed: %+v", msgs[1])
	}
	plain := msgs[:1]
	if got := withoutImages(plain, "(none)"); &got[0] != &plain[0] {
		t.Error("no image: the slice is not returned as it is")
	}
}
