# ruff: noqa: E501  (a table of questions: one question per entry reads better than wrapped strings)
"""Build questions.jsonl, the labelled question set for the quick-start memory.

    python examples/quickstart/eval/build_questions.py           # rewrite questions.jsonl
    python examples/quickstart/eval/build_questions.py --check   # exit 1 if it is out of date

Each question names its evidence by a file and an *anchor*: a piece of text on one line of
that file. The anchor's whole Markdown item (a bullet with its continuation lines, a table
row, a short paragraph) becomes ``{"path", "lines": [first, last]}``, so editing a memory file
only needs this script re-run, never line numbers typed by hand. An anchor must occur on
exactly one line of its file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
AGENTS = HERE.parent / "agents"
OUT = HERE / "questions.jsonl"

S, P = "support", "scratchpad"
M, U = "MEMORY.md", "users/ada/MEMORY.md"


def d(day: str) -> str:
    """An agent-level daily note: d("11-12") -> memory/2026-11-12.md."""
    return f"memory/2026-{day}.md"


def ud(day: str) -> str:
    """A daily note of Ada's own memory."""
    return f"users/ada/memory/2026-{day}.md"


def any_of(*items: tuple[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """The same evidence written in several places: any one of them counts."""
    return ("any", list(items))


INC0912 = any_of((M, "INC-0912 - 2026-11-06"), (d("11-06"), "15:02 fixed: UPS had rotated"))

# (id, kind, agent, user, question, evidence); evidence items are (path, anchor) or any_of(...)
# One question a line or two, aligned by hand: the formatter leaves the table alone.
# fmt: off
QUESTIONS: list[tuple[str, str, str, str | None, str, list]] = [
    # ----------------------------------------------------------------- exact codes
    ("code-tck4471-ref", "exact-code", S, None, "TCK-4471 Stripe refund reference",
     [any_of((d("11-13"), "Mei issued the refund at 09:20 UTC"), (M, "Refund issued 2026-11-13, Stripe"))]),
    ("code-re-settled", "exact-code", S, None, "where and when did re_3QxT7mK2Lp9 settle?",
     [(d("11-30"), "Mei traced re_3QxT7mK2Lp9")]),
    ("code-inv20931", "exact-code", S, None, "what was wrong with INV-20931?",
     [any_of((d("11-10"), "INV-20931 (2026-11-03): Enterprise"), (d("11-03"), "Nobody noticed yet"))]),
    ("code-inv20877", "exact-code", S, None, "what was billed on INV-20877?",
     [(d("11-10"), "INV-20877 (2026-11-01): Scale plan")]),
    ("code-acme2291-sla", "exact-code", S, None, "ACME-2291 §7.2 service credit terms",
     [(M, "SLA (contract ACME-2291 §7.2)")]),
    ("code-inc0912-cause", "exact-code", S, None, "INC-0912 root cause",
     [any_of((M, "INC-0912 - 2026-11-06"), (d("11-09"), "Root cause: UPS rotated"))]),
    ("code-inc0917-late", "exact-code", S, None, "INC-0917: how many deliveries were late?",
     [any_of((M, "INC-0917 - 2026-11-19"), (d("11-19"), "11:05 resolved: consumers"))]),
    ("code-inc0921-p95", "exact-code", S, None, "INC-0921 p95 latency",
     [any_of((M, "INC-0921 - 2026-11-27"), (d("11-27"), "15:00-17:20 UTC rate requests p95"))]),
    ("code-inc0925", "exact-code", S, None, "INC-0925",
     [(d("12-04"), "10:05-10:40 UTC DHL's API timed out")]),
    ("code-inc0898", "exact-code", S, None, "INC-0898 impact",
     [(d("10-14"), "INC-0898: the Royal Mail sandbox")]),
    ("code-bug1187-workaround", "exact-code", S, None, "BUG-1187 workaround",
     [any_of((M, "Known bug BUG-1187"), (d("11-19"), "Reproduced in the sandbox: Royal Mail"),
             (d("11-24"), "BUG-1187 (Royal Mail street names >35 chars)"))]),
    ("code-bug1187-version", "exact-code", S, None, "BUG-1187 fix version and week",
     [(d("12-03"), "BUG-1187 (Royal Mail street names over 35")]),
    ("code-fr233", "exact-code", S, None, "FR-233 roadmap",
     [(d("12-07"), "FR-233 (webhook replay endpoint")]),
    ("code-tck4452", "exact-code", S, None, "TCK-4452 approved label limit",
     [any_of((d("11-06"), "Hannah approved TCK-4452"), (M, "Temporary label limit raise to 25,000"))]),
    ("code-tck4489", "exact-code", S, None, "TCK-4489 plugin conflict",
     [any_of((d("11-04"), "WooCommerce store connected, but orders"), (d("11-04"), "Beth will ask her developer"))]),
    ("code-tck4420", "exact-code", S, None, "TCK-4420 commercial invoice Switzerland",
     [(d("11-03"), "Kaffeerösterei Lindner TCK-4420")]),
    ("code-tck4503", "exact-code", S, None, "TCK-4503 Norway customs",
     [any_of((d("11-16"), "Lindner TCK-4503"), (d("11-18"), "Replied to Lindner TCK-4503"))]),
    ("code-tck4511", "exact-code", S, None, "what did the merchant on TCK-4511 report?",
     [any_of((d("11-18"), "TCK-4511 (Growth merchant)"), (d("11-19"), "Reproduced in the sandbox: Royal Mail"))]),
    ("code-tck4527", "exact-code", S, None, "TCK-4527 overage amount",
     [(d("11-23"), "Marguerite asked (by phone, as usual")]),
    ("code-tck4531", "exact-code", S, None, "TCK-4531 API key pasted",
     [(d("11-24"), "A Starter merchant (TCK-4531)")]),
    ("code-tck4560-extension", "exact-code", S, None, "TCK-4560 limit extension decision",
     [(d("12-02"), "Hannah approved an extension to 2026-12-06")]),
    ("code-tck4588", "exact-code", S, None, "TCK-4588 SSO admin",
     [(d("12-09"), "Acme TCK-4588")]),
    ("code-inv21408", "exact-code", S, None, "INV-21408 total",
     [(d("12-01"), "Acme December invoice INV-21408")]),
    ("code-inv21422", "exact-code", S, None, "INV-21422 overage",
     [(d("12-01"), "Kitebox INV-21422 includes November overage")]),
    ("code-inv21415", "exact-code", S, None, "INV-21415",
     [(d("12-01"), "Oakridge Pet Co. INV-21415")]),
    ("code-inv20544", "exact-code", S, None, "why was INV-20544 issued?",
     [(d("10-16"), "invoice as INV-20544")]),
    ("code-m2301", "exact-code", S, None, "merchant m_2301",
     [(M, "Kaffeerösterei Lindner (Starter, merchant m_2301")]),
    ("code-m2388", "exact-code", S, None, "m_2388 trial",
     [any_of((M, "14-day Scale trial started 2026-11-02"), (d("11-02"), "Oakridge Pet Co. (m_2388) started"))]),
    ("code-m1930", "exact-code", S, None, "m_1930 integration",
     [(M, "API-only integration, built by")]),
    ("code-tck4102", "exact-code", S, None, "TCK-4102 SSO",
     [(d("10-05"), "TCK-4102: Dana asked")]),
    ("code-tck4150", "exact-code", S, None, "TCK-4150 weight_oz",
     [(d("10-07"), "Bulk label import from CSV fails")]),
    ("code-tck4166", "exact-code", S, None, "TCK-4166 rate limit 25 requests",
     [(d("10-09"), "He asked for 25 requests/second")]),
    ("code-tck4236", "exact-code", S, None, "parcelwise-billing.example.net TCK-4236",
     [(d("10-23"), "Three merchants forwarded emails")]),
    ("code-tck4210", "exact-code", S, None, "TCK-4210 upgrade",
     [(d("10-20"), "Marguerite Ashby phoned")]),
    ("code-ext-kitebox", "exact-code", S, None, "who answers in #ext-kitebox?",
     [(M, "Contact: Rafael Moreno (co-founder)")]),
    ("code-ap-acme", "exact-code", S, None, "what is ap@acme-outdoor.example used for?",
     [(M, "Contacts: Dana Whitfield (Director")]),
    ("code-tck4431", "exact-code", S, None, "TCK-4431 HMAC-SHA256",
     [(d("11-04"), "TCK-4431: Wes Harper asked")]),
    ("code-kb-url", "exact-code", S, None, "help.parcelwise.example/billing/invoices",
     [(d("11-20"), "Tomás published the KB article")]),
    ("code-settings-webhooks", "exact-code", S, None, "Settings → Webhooks → Deliveries",
     [(d("11-24"), "Priya finished the webhook troubleshooting")]),
    ("code-arn", "exact-code", S, None, "ARN 74839204811263",
     [(d("11-30"), "Mei traced re_3QxT7mK2Lp9")]),
    ("code-tp1326", "exact-code", P, "ada", "TP1326 departure time",
     [(ud("11-25"), "Booked the flight to Manchester")]),
    ("code-fl88213", "exact-code", P, "ada", "FL-88213",
     [(ud("12-05"), "Ordered flowers for Mum's birthday")]),
    # ----------------------------------------------------------------- paraphrases
    ("para-ring-not-write", "paraphrase", S, None,
     "Which merchant dislikes lengthy written messages and wants us to call instead?",
     [(M, "Owner Marguerite Ashby would much rather")]),
    ("para-double-fee", "paraphrase", S, None,
     "What made the outdoor-gear client pay for the same tier two times?",
     [any_of((d("11-10"), "INV-20931 (2026-11-03): Enterprise"), (d("11-03"), "Nobody noticed yet"))]),
    ("para-finance-signoff", "paraphrase", S, None,
     "Who signs off on money going back to the customers with the biggest contracts?",
     [(M, "Mei Lin - finance operations")]),
    ("para-integrations-expert", "paraphrase", S, None,
     "Who on the team is strongest with programmatic integrations?",
     [(M, "Priya Nair - support agent, tier 2")]),
    ("para-toy-season", "paraphrase", S, None,
     "When does the toy company ship most of its yearly parcels?",
     [(M, "Seasonal: 70% of annual volume")]),
    ("para-reimbursement-delay", "paraphrase", S, None,
     "How long before a reimbursement becomes visible to the payer?",
     [(M, "Card refunds take 5-10 business days")]),
    ("para-unused-sticker", "paraphrase", S, None,
     "Can a printed shipping sticker that was never used be cancelled, and until when?",
     [(M, "Labels can be voided within 14 days")]),
    ("para-polite-roaster", "paraphrase", S, None,
     "Which coffee roaster wants to be addressed politely in their own language?",
     [(M, "Jens Lindner writes in German")]),
    ("para-surf-notifications", "paraphrase", S, None,
     "What does the surfing shop use our delivery notifications for?",
     [(M, "API-only integration, built by")]),
    ("para-pet-trial", "paraphrase", S, None,
     "Why did the pet-food shop's test period get longer?",
     [any_of((M, "14-day Scale trial started 2026-11-02"), (d("11-11"), "Hannah extended the Oakridge trial"))]),
    ("para-courier-login", "paraphrase", S, None,
     "Why could nobody print parcel stickers for one courier for almost an hour?",
     [INC0912]),
    ("para-alarm-added", "paraphrase", S, None,
     "What alarm did engineering add after the courier sign-in failure?",
     [(d("11-09"), "Root cause: UPS rotated")]),
    ("para-courier-ideas", "paraphrase", S, None,
     "Who should hear suggestions about shipping-company connectors?",
     [(M, "Sam Park - product manager")]),
    ("para-cheapest-tier", "paraphrase", S, None,
     "What is the smallest monthly subscription and what does it include?",
     [(M, "Plans: Starter $29")]),
    ("para-road-names", "paraphrase", S, None,
     "What goes wrong with lengthy road designations on British postal stickers, and how do we get around it?",
     [any_of((M, "Known bug BUG-1187"), (d("11-19"), "Reproduced in the sandbox: Royal Mail"))]),
    ("para-authentic-events", "paraphrase", S, None,
     "How can a developer check that incoming event pushes are authentic?",
     [(d("11-04"), "TCK-4431: Wes Harper asked")]),
    ("para-fetch-bills", "paraphrase", S, None,
     "Where do merchants go to fetch their past bills?",
     [any_of((d("11-03"), "TCK-4417: Starter merchant could not find"), (d("11-20"), "Tomás published the KB"))]),
    ("para-uptime-guarantee", "paraphrase", S, None,
     "What uptime was the camping-gear company guaranteed?",
     [(M, "SLA (contract ACME-2291 §7.2)")]),
    ("para-pager", "paraphrase", S, None,
     "Who carries the developers' pager in the second half of the month before Christmas?",
     [any_of((M, "Jonas Weber - platform engineering lead"), (d("11-16"), "Jonas Weber primary on-call"))]),
    ("para-bank-trace", "paraphrase", S, None,
     "What did the merchant's financial institution need to locate the returned money?",
     [(d("11-30"), "Mei traced re_3QxT7mK2Lp9")]),
    ("para-ten-hours-ahead", "paraphrase", S, None,
     "Which client lives ten hours ahead of us?",
     [(M, "API-only integration, built by")]),
    ("para-extra-shipment-price", "paraphrase", S, None,
     "How much is each extra shipment over the included quota charged?",
     [any_of((M, "Plans: Starter $29"), (d("11-05"), "Ada explained the overage is $0.05/label"))]),
    ("para-new-colleague", "paraphrase", S, None,
     "Who is joining the team after the holidays, and who will show her around?",
     [(d("12-07"), "New hire: Noor Haddad")]),
    ("para-fake-payment-mails", "paraphrase", S, None,
     "What did we tell people who received fake payment-update messages?",
     [(d("10-23"), "Reply macro \"[Account] Suspicious email\"")]),
    ("para-resend-pushes", "paraphrase", S, None,
     "How many times is an undelivered push notification re-sent, and over what period?",
     [any_of((d("10-05"), "Priya documented the webhook retry policy"),
             (d("11-24"), "Priya finished the webhook troubleshooting"))]),
    ("para-spreadsheet-upload", "paraphrase", S, None,
     "Why did the toy seller's spreadsheet upload fail completely?",
     [(d("10-07"), "Bulk label import from CSV fails")]),
    ("para-hard-cap", "paraphrase", S, None,
     "What happened to the toy seller's hard cap in the busiest weeks?",
     [any_of((d("11-20"), "Kitebox limit raise live"), (M, "Temporary label limit raise to 25,000"))]),
    ("para-evening-americas", "paraphrase", S, None,
     "Who handles the American evening queue early in the week?",
     [(d("10-07"), "Hannah approved extending Austin support hours")]),
    ("para-second-admin", "paraphrase", S, None,
     "Who got extra identity-provider management rights for the camping-gear company?",
     [(d("12-09"), "Acme TCK-4588")]),
    ("para-study", "paraphrase", P, "ada", "Where does Ada study the local language, and when?",
     [(U, "Learning European Portuguese: B1 course")]),
    ("para-breakfast-drink", "paraphrase", P, "ada", "What does Ada drink at breakfast?",
     [(U, "Coffee: a galão in the morning")]),
    ("para-race", "paraphrase", P, "ada", "What race is Ada preparing for?",
     [(U, "Training for the Lisbon half marathon")]),
    ("para-soup", "paraphrase", P, "ada", "Which soup does Ada want to cook from her aunt's notes?",
     [(ud("11-28"), "Recipe to try: caldo verde")]),
    # ----------------------------------------------------------------- temporal
    ("time-sync-1117-enterprise", "temporal", S, None,
     "What did the weekly sync on Tue 17 Nov decide about Enterprise replies?",
     [(d("11-17"), "From 2026-11-20, every Enterprise reply is reviewed")]),
    ("time-sync-1208-overage", "temporal", S, None,
     "What did we decide last Tuesday (8 Dec) about overage pricing?",
     [(d("12-08"), "Overage price rises from $0.05 to $0.06")]),
    ("time-1130-acme", "temporal", S, None,
     "What happened with the Acme refund on Monday 30 November?",
     [(d("11-30"), "Mei traced re_3QxT7mK2Lp9")]),
    ("time-1106-outage", "temporal", S, None, "What went wrong on Friday 6 November?",
     [any_of((d("11-06"), "14:10 UTC first failures in the label log"), (M, "INC-0912 - 2026-11-06"))]),
    ("time-1201-retro", "temporal", S, None, "What did we decide on 1 December about the retro date?",
     [(d("12-01"), "The peak-season retro moves to Tue 2027-01-12")]),
    ("time-1013-csat", "temporal", S, None, "What was agreed at the sync on 13 October about CSAT surveys?",
     [(d("10-13"), "The CSAT survey goes out 2 days")]),
    ("time-1021-targets", "temporal", S, None,
     "Which first-response targets did the sync of 21 October set?",
     [(d("10-21"), "First response targets from 2026-11-01")]),
    ("time-blackfriday-incident", "temporal", S, None, "Which incident happened on Black Friday?",
     [any_of((d("11-27"), "15:00-17:20 UTC rate requests p95"), (M, "INC-0921 - 2026-11-27"))]),
    ("time-blackfriday-queue", "temporal", S, None, "How busy was the queue on Black Friday?",
     [(d("11-27"), "96 tickets in (record day)")]),
    ("time-thanksgiving", "temporal", S, None, "What happened in support on US Thanksgiving?",
     [(d("11-26"), "US Thanksgiving: Austin office off")]),
    ("time-1202-kitebox", "temporal", S, None, "What did Hannah decide on 2 December about Kitebox's request?",
     [(d("12-02"), "Hannah approved an extension to 2026-12-06")]),
    ("time-1117-severity", "temporal", S, None, "What did the 17 November sync decide about bug severity?",
     [(d("11-17"), "During peak, Enterprise tickets raise bug severity")]),
    ("time-1014-royalmail", "temporal", S, None, "What happened on 14 October with Royal Mail?",
     [(d("10-14"), "INC-0898: the Royal Mail sandbox")]),
    ("time-1028-acme", "temporal", S, None, "What did Acme do on 28 October?",
     [(d("10-28"), "Dana Whitfield signed contract ACME-2291 today")]),
    ("time-1112-approval", "temporal", S, None, "What did Mei approve on Thursday 12 November?",
     [(d("11-12"), "Mei Lin approved at 10:05 UTC")]),
    ("time-1118-release", "temporal", S, None, "What shipped on Wednesday 18 November?",
     [(d("11-18"), "DHL Express paperless trade on by default")]),
    ("time-1119-webhooks", "temporal", S, None, "Which incident hit webhooks on 19 November, and how long did it last?",
     [any_of((d("11-19"), "09:30 UTC Bluefin (TCK-4520) reported"), (d("11-19"), "11:05 resolved: consumers"),
             (M, "INC-0917 - 2026-11-19"))]),
    ("time-1201-holding", "temporal", S, None,
     "What did we decide on 1 December about holding replies for carrier delays?",
     [(d("12-01"), "Holding replies for carrier delays now link")]),
    ("time-october-numbers", "temporal", S, None, "What were the October ticket volume and CSAT?",
     [(d("10-30"), "512 tickets in, 509 closed")]),
    ("time-1120-promises", "temporal", S, None,
     "What did we agree with Hannah on 20 November about what we can promise during peak?",
     [any_of((d("11-20"), "We can promise: next update times"), (d("11-20"), "We cannot promise: carrier"))]),
    ("time-1210-rafael", "temporal", S, None, "What did Rafael accept on 10 December?",
     [(d("12-10"), "Hannah and Mei agreed a one-time goodwill credit")]),
    ("time-1128-saturday", "temporal", S, None, "What happened on the Saturday of the Black Friday weekend?",
     [(d("11-28"), "Ada on shift 07:00-15:00 UTC, Tomás")]),
    ("time-1007-hours", "temporal", S, None, "What was decided on 7 October about support hours?",
     [(d("10-07"), "Hannah approved extending Austin support hours")]),
    ("time-1203-bug", "temporal", S, None,
     "What did engineering decide on 3 December about the Royal Mail street-name bug?",
     [(d("12-03"), "BUG-1187 (Royal Mail street names over 35")]),
    ("time-1208-macro", "temporal", S, None,
     "What did the 8 December sync say about the peak-season carrier macro?",
     [(d("12-08"), "The \"Carrier delay - peak season\" macro stays")]),
    ("time-1113-reply", "temporal", S, None, "What did Ada send to Acme's accounts payable on 13 November?",
     [(d("11-13"), "Ada sent the \"Refund issued\" reply")]),
    ("time-1204-week", "temporal", S, None, "How many tickets came in the week ending Friday 4 December?",
     [(d("12-04"), "244 tickets in (peak week)")]),
    ("time-1125-flight", "temporal", P, "ada", "What did Ada book on 25 November?",
     [(ud("11-25"), "Booked the flight to Manchester")]),
    ("time-1121-longrun", "temporal", P, "ada", "What was the long-run plan made on Saturday 21 November?",
     [(ud("11-21"), "Long run plan for Sunday: 16 km")]),
    ("time-1128-portuguese", "temporal", P, "ada", "What did Sofia say about Ada's Portuguese on 28 November?",
     [(ud("11-28"), "Sofia says my past tenses")]),
    # ----------------------------------------------------------------- multi-hop
    ("hop-december-credit", "multi-hop", S, None,
     "How much is Acme's December invoice, and what caused the outage it has money off for?",
     [(d("12-01"), "Acme December invoice INV-21408"),
      any_of((M, "INC-0912 - 2026-11-06"), (d("11-09"), "Root cause: UPS rotated"))]),
    ("hop-kitebox-raise-mistake", "multi-hop", S, None,
     "Who approved the Kitebox temporary limit raise, and what was wrong in our first note about it?",
     [(d("11-06"), "Hannah approved TCK-4452"), (d("11-06"), "Correction (Mei, 17:40)")]),
    ("hop-kitebox-overage-credit", "multi-hop", S, None,
     "What was Kitebox's November overage, and how much goodwill credit did they get on it?",
     [(d("12-01"), "Kitebox INV-21422 includes November overage"),
      (d("12-10"), "Hannah and Mei agreed a one-time")]),
    ("hop-fernhill-calls", "multi-hop", S, "ada",
     "How does the Fernhill owner want to be contacted, and who should make those calls until January?",
     [(M, "Owner Marguerite Ashby would much rather"), (U, "she prefers phone follow-ups with Fernhill")]),
    ("hop-replay-timezone", "multi-hop", S, None,
     "The merchant that asked for a webhook replay endpoint: which time zone are they in?",
     [(d("11-19"), "Wes Harper (Bluefin) asked for an endpoint"), (M, "Time zone AEST")]),
    ("hop-replay-when", "multi-hop", S, None,
     "When will the feature Bluefin asked for after the webhook delays ship?",
     [(d("11-19"), "Wes Harper (Bluefin) asked for an endpoint"), (d("12-07"), "FR-233 (webhook replay endpoint")]),
    ("hop-acme-total", "multi-hop", S, None,
     "What total did Acme get for the November problems, and when was the card part issued?",
     [(d("11-10"), "Total for Acme: $349 card refund"), (d("11-13"), "Mei issued the refund at 09:20")]),
    ("hop-fernhill-scale", "multi-hop", S, None,
     "How far over her plan was Fernhill in November, and what would the bigger plan cost per year?",
     [(d("11-23"), "Marguerite asked (by phone, as usual"), (d("12-03"), "Fernhill: Marguerite rang to ask")]),
    ("hop-acme-qbr", "multi-hop", S, None,
     "Who is Acme's account manager, and when is their first quarterly business review?",
     [(M, "Luis Ortega - Enterprise account manager"),
      any_of((d("11-24"), "Acme: Dana asked Luis to schedule"), (M, "QBR (quarterly business review)"))]),
    ("hop-lindner-release", "multi-hop", S, None,
     "Which release fixed the customs problem on TCK-4503, and what did it change?",
     [(d("11-16"), "Lindner TCK-4503"), (d("11-18"), "DHL Express paperless trade on by default")]),
    ("hop-christmas-cover", "multi-hop", S, None,
     "Who is acting lead while Ada is away, and who is on call on Christmas Day?",
     [(d("12-11"), "Ada on leave 2026-12-22"), (d("12-11"), "25-26 Dec: P1 only")]),
    ("hop-oakridge-plan", "multi-hop", S, None,
     "The merchant whose trial was extended: which plan did they buy, and what is its invoice number?",
     [(d("11-25"), "Oakridge (Beth) accepted the Scale annual"), (d("12-01"), "Oakridge Pet Co. INV-21415")]),
    ("hop-tier1-late", "multi-hop", S, None,
     "What is the tier-1 agent's approval limit, and which shift does he work since October?",
     [(M, "Tomás Reyes - support agent, tier 1"), (d("10-07"), "Hannah approved extending Austin")]),
    ("hop-tier2-proposal", "multi-hop", S, "ada",
     "Ada wants to raise tier-2 refund limits: what is the limit now, and where will the proposal be discussed?",
     [(M, "Priya Nair - support agent, tier 2"), (U, "she wants to propose raising tier-2"),
      (d("12-08"), "Refund limits stay as they are")]),
    ("hop-inc0912-acme", "multi-hop", S, None,
     "Which carrier failed during INC-0912, and which warehouse missed its collection because of it?",
     [INC0912, (d("11-06"), "TCK-4460 (Acme Outdoor)")]),
    ("hop-kitebox-volume", "multi-hop", S, None,
     "How many labels did Kitebox expect for the peak window, and how many had they used by Black Friday evening?",
     [(d("11-05"), "Kitebox expects ~22,000 labels"), (d("11-27"), "16,850 labels this month")]),
    ("hop-ledger-retro", "multi-hop", S, None,
     "Who prototypes Ada's promises-ledger idea, and when is the retro where it could be shown?",
     [(d("12-01"), "Ada's \"promises ledger\" idea"), (d("12-01"), "The peak-season retro moves")]),
    ("hop-lindner-closure", "multi-hop", S, None,
     "Whose roastery is closed over Christmas, and in which language do we reply to them?",
     [(d("12-03"), "Lindner (Jens) wrote that the roastery"), (M, "Jens Lindner writes in German")]),
    ("hop-hannah-trial", "multi-hop", S, None,
     "Who is the Head of Customer Success, and which trial did she extend to the end of November?",
     [(M, "Hannah Cole - Head of Customer Success"),
      any_of((d("11-11"), "Hannah extended the Oakridge trial"), (M, "14-day Scale trial started 2026-11-02"))]),
    ("hop-inc0921-sla", "multi-hop", S, None,
     "Which customers asked about INC-0921, and does the Enterprise contract count it as an outage?",
     [(d("11-27"), "Kitebox and Acme both asked"), (M, "SLA (contract ACME-2291 §7.2)")]),
    ("hop-mum-birthday", "multi-hop", P, "ada", "When is Mum's birthday, and what did Ada order for it?",
     [(U, "Mum's birthday: 14 December"), (ud("12-05"), "Ordered flowers for Mum's birthday")]),
    ("hop-flight-seat", "multi-hop", P, "ada",
     "Which flight does Ada take at Christmas, and is its seat the kind she prefers?",
     [(ud("11-25"), "Booked the flight to Manchester"), (ud("12-09"), "Prefer window seats")]),
    # ----------------------------------------------------------------- preferences (user memory)
    ("pref-structure", "preference", S, "ada", "How does Ada want answers structured?",
     [(U, "TL;DR in one line first")]),
    ("pref-drafts", "preference", S, "ada", "How should customer drafts for Ada be written?",
     [(U, "Customer drafts ready to paste")]),
    ("pref-enterprise", "preference", S, "ada", "What does Ada want alongside an Enterprise draft?",
     [(U, "For Enterprise customers, she wants the draft")]),
    ("pref-dates", "preference", S, "ada", "How does Ada like dates written?",
     [(U, "Dates with weekday and UTC")]),
    ("pref-agreements", "preference", S, "ada", "When Ada asks what we agreed, how should Wren answer?",
     [(U, "When she asks \"what did we agree\"")]),
    ("pref-hours", "preference", S, "ada", "What are Ada's working hours?",
     [(U, "Works 08:30-17:30 Lisbon time")]),
    ("pref-report-due", "preference", S, "ada", "When is Ada's weekly report due and which metrics are in it?",
     [(U, "Weekly support report every Friday")]),
    ("pref-report-layout", "preference", S, "ada", "How does Ada want the weekly report laid out?",
     [(ud("12-02"), "Weekly report: she wants the numbers")]),
    ("pref-notes-hannah", "preference", S, "ada", "How should notes to Hannah be written?",
     [(ud("12-02"), "Internal notes to Hannah")]),
    ("pref-german", "preference", S, "ada", "Should Wren write German replies directly for Ada?",
     [(ud("12-02"), "She does not want Wren to draft replies in German")]),
    ("pref-meetings", "preference", S, "ada", "When can meetings be booked for Ada?",
     [(ud("12-02"), "Meetings: never book anything")]),
    ("pref-internal-channel", "preference", S, "ada", "Which channel does Ada prefer for talking to colleagues?",
     [(ud("12-02"), "Slack over email")]),
    ("pref-fernhill-calls", "preference", S, "ada", "Who should do the phone follow-ups with Fernhill?",
     [(U, "she prefers phone follow-ups with Fernhill")]),
    ("pref-banned-phrases", "preference", S, "ada", "Which phrases and punctuation does Ada ban from drafts?",
     [(U, "Customer drafts ready to paste")]),
    ("pref-books", "preference", P, "ada", "What kind of books does Ada like?",
     [(U, "Reading: literary fiction")]),
    ("pref-coffee-afternoon", "preference", P, "ada", "Does Ada drink coffee in the afternoon?",
     [(U, "Coffee: a galão in the morning")]),
    ("pref-reminders", "preference", P, "ada", "When does Ada want to be reminded of things?",
     [(U, "Likes reminders the evening before")]),
    ("pref-seats", "preference", P, "ada", "What seats and flight times does Ada prefer?",
     [(ud("12-09"), "Prefer window seats")]),
    ("pref-luggage", "preference", P, "ada", "Does Ada check a bag for short trips?",
     [(ud("12-09"), "Prefer window seats")]),
    ("pref-current-book", "preference", P, "ada", "What is Ada reading at the moment?",
     [(U, "Reading: literary fiction")]),
    ("pref-long-runs", "preference", P, "ada", "When and where does Ada do her long runs?",
     [(U, "Training for the Lisbon half marathon")]),
    ("pref-book-club", "preference", P, "ada", "Which book club does Ada go to, and what is the next book?",
     [(ud("12-05"), "Book club (first Wednesday")]),
    # ----------------------------------------------------------------- unanswerable
    ("none-wifi", "unanswerable", S, None, "What is the office wifi password?", []),
    ("none-acme-revenue", "unanswerable", S, None, "What is Acme Outdoor's annual revenue?", []),
    ("none-ceo", "unanswerable", S, None, "Who is the CEO of Parcelwise?", []),
    ("none-fedex", "unanswerable", S, None, "What did we decide about a FedEx integration?", []),
    ("none-tck9999", "unanswerable", S, None, "What is the status of TCK-9999?", []),
    ("none-dhl-price", "unanswerable", S, None, "When is DHL's next price increase?", []),
    ("none-kitebox-vat", "unanswerable", S, None, "What is Kitebox's VAT number?", []),
    ("none-bluefin-2028", "unanswerable", S, None, "Did Bluefin renew for 2028?", []),
    ("none-tomas-address", "unanswerable", S, None, "What is Tomás's home address?", []),
    ("none-acme-september", "unanswerable", S, None, "How many labels did Acme ship in September 2025?", []),
    ("none-growth-sla", "unanswerable", S, None, "What uptime credit does the Growth plan contract give?", []),
    ("none-1215", "unanswerable", S, None, "What did we decide on 15 December?", []),
    ("none-crypto", "unanswerable", S, None, "Do we accept cryptocurrency payments?", []),
    ("none-singapore", "unanswerable", S, None, "Who handles support in the Singapore office?", []),
    ("none-enterprise-ratelimit", "unanswerable", S, None, "What is the API rate limit on the Enterprise plan?", []),
    ("none-inc0930", "unanswerable", S, None, "When was INC-0930 and what broke?", []),
    ("none-hannah-phone", "unanswerable", S, None, "What is Hannah Cole's mobile number?", []),
    ("none-party", "unanswerable", S, None, "How much did the office holiday party cost?", []),
    ("none-marguerite-decision", "unanswerable", S, None, "Which plan did Fernhill choose in January 2027?", []),
    ("none-sso-provider", "unanswerable", S, None, "Which identity provider does Kitebox use for single sign-on?", []),
    ("none-blood-type", "unanswerable", P, "ada", "What is Ada's blood type?", []),
    ("none-cat", "unanswerable", P, "ada", "What is the name of Ada's cat?", []),
    ("none-gym", "unanswerable", P, "ada", "Which gym does Ada go to?", []),
    ("none-car", "unanswerable", P, "ada", "What car does Ada drive?", []),
]
# fmt: on


def item_lines(lines: list[str], i: int) -> tuple[int, int]:
    """The 0-based inclusive span of the Markdown item around line ``i``."""

    def is_cont(line: str) -> bool:
        return line.startswith("  ") and line.strip() != ""

    start = i
    while start > 0 and is_cont(lines[start]) and lines[start - 1].strip():
        start -= 1
    end = i
    while end + 1 < len(lines) and is_cont(lines[end + 1]):
        end += 1
    return start, end


def resolve(agent: str, path: str, anchor: str) -> dict[str, object]:
    file = AGENTS / agent / path
    lines = file.read_text(encoding="utf-8").split("\n")
    found = [i for i, line in enumerate(lines) if anchor in line]
    if len(found) != 1:
        raise SystemExit(f"{agent}/{path}: anchor {anchor!r} found on {len(found)} lines (need 1)")
    a, b = item_lines(lines, found[0])
    return {"path": path, "lines": [a + 1, b + 1]}


def _item(agent: str, evidence: tuple[str, object]) -> dict[str, object]:
    path, anchor = evidence
    if path == "any":
        return {"any": [resolve(agent, p, a) for p, a in anchor]}  # type: ignore[attr-defined]
    return resolve(agent, path, str(anchor))


def build() -> str:
    out = []
    seen: set[str] = set()
    for qid, kind, agent, user, question, evidence in QUESTIONS:
        if qid in seen:
            raise SystemExit(f"duplicate id {qid}")
        seen.add(qid)
        row: dict[str, object] = {"id": qid, "question": question, "agent": agent}
        if user:
            row["user"] = user
        row["kind"] = kind
        if evidence:
            row["expect"] = [_item(agent, e) for e in evidence]
        out.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(out) + "\n"


def main() -> int:
    text = build()
    if "--check" in sys.argv[1:]:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({text.count(chr(10))} questions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
