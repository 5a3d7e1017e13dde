package main

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/membus/membus/pkg/bus"
)

// reasonDetail is what varies between letters of one kind of failure: ids, numbers, quoted values.
var reasonDetail = regexp.MustCompile(`"[^"]*"|'[^']*'|[0-9]+`)

// dlqReport lists the dead letters and sorts them by the account of their original subject:
// letters of --expected (the account `abuse` sent its bad payloads as) are the expected ones;
// any other is good data dead-lettered, which a fault must never cause. Reasons are grouped
// with their ids and numbers blanked.
func dlqReport(args []string) error {
	var c common
	fs := c.flagSet("dlq")
	expected := fs.String("expected", "", "the account whose letters are expected (abuse's)")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	letters, err := bus.ListDLQ(ctx, js, names, "", 100000)
	if err != nil {
		return err
	}
	byReason := map[string]int{}
	byStream := map[string]int{}
	good := 0
	goodReasons := []string{}
	for _, l := range letters {
		sub, perr := names.Parse(l.OriginalSubject)
		reason := strings.TrimPrefix(reasonDetail.ReplaceAllString(l.Reason, "…"), "permanent: ")
		if len(reason) > 90 {
			reason = reason[:90] + "…"
		}
		if perr == nil && sub.Account == *expected {
			byReason[strings.ToLower(l.Stream)+": "+reason]++
			byStream[strings.ToLower(l.Stream)]++
			continue
		}
		good++
		goodReasons = append(goodReasons, l.OriginalSubject+": "+l.Reason)
	}
	printJSON(map[string]any{"total": len(letters), "expected": len(letters) - good, "good_data": good, "by_stream": byStream, "by_reason": byReason, "good_data_reasons": goodReasons})
	return nil
}
