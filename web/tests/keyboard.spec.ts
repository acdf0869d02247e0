// The app by keyboard alone (docs/web.md, Keyboard): no mouse click anywhere in these tests. After every
// action the focus is somewhere sensible (never <body>) and visibly marked (a :focus-visible outline).
import type { Locator, Page } from "@playwright/test";
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text, writeFile } from "./keel";

/** The focused element is not <body>, and it shows a focus ring (outline of at least 2px). */
async function expectVisibleFocus(page: Page, what: string): Promise<void> {
  await expect
    .poll(
      () =>
        page.evaluate(() => {
          const el = document.activeElement;
          if (el === null || el === document.body) return "the focus is on <body>";
          if (!el.matches(":focus-visible")) return `${el.tagName} is focused without :focus-visible`;
          const style = getComputedStyle(el);
          if (style.outlineStyle === "none" || parseFloat(style.outlineWidth) < 2) return `${el.tagName} has no focus outline`;
          const box = el.getBoundingClientRect();
          return box.width > 0 && box.height > 0 ? "visible" : `${el.tagName} has no size`;
        }),
      { message: `focus after: ${what}` },
    )
    .toBe("visible");
}

/** Presses Tab (Shift+Tab when `back`) until `target` has the focus; fails after 80 presses. */
async function tabTo(page: Page, target: Locator, back = false): Promise<void> {
  for (let i = 0; i < 80; i++) {
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return;
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
  }
  throw new Error(`Tab never reached ${target.toString()}`);
}

test("a session by keyboard alone: send, steer, queue, remove, interrupt, continue, stop, an approval and a question", async ({ page, keel }) => {
  await keel.startModel({
    responses: [
      respond("also mention cats", [text("Cats noted.")]),
      respond("[long]", [text("Working on it. "), { type: "delay", ms: 1500 }, text("Still working.")]),
      respond("[hang]", [text("Thinking"), { type: "hang" }]),
      respond("[write]", [writeFile("call_w", "notes/a.txt", "hello from keel\n")]),
      respond("blue", [text("Blue it is.")]),
      respond("[ask]", [{ type: "tool_calls", calls: [{ id: "call_q", name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } }] }]),
      // Continue after an interrupt: keel tells the model about the interrupt.
      respond("interrupted the previous turn", [text("Going on"), { type: "hang" }]),
      respond("", [text("Done.")]),
    ],
  });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await expect(box).toBeFocused();

  // Type and send (a new thread), then steer the running turn.
  await page.keyboard.type("a [long] task");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toContainText("Working on it.");
  await page.keyboard.type("also mention cats");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.steer")).toContainText("also mention cats");
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Cats noted.");
  await expect(box).toBeFocused();
  await expectVisibleFocus(page, "send and steer");

  // New thread (its button, by Tab): the focus comes back to the input box.
  await tabTo(page, page.getByRole("button", { name: "New thread" }), true);
  await expectVisibleFocus(page, "Tab to New thread");
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("New thread");
  await expect(box).toBeFocused();

  // A turn that runs until it is stopped; two inputs queued with the second action (Alt+Enter).
  await page.keyboard.type("[hang] please");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.streaming .live-text")).toHaveText("Thinking");
  await page.keyboard.type("first queued");
  await page.keyboard.press("Alt+Enter");
  await expect(page.locator(".queue li")).toHaveCount(1);
  await page.keyboard.type("second queued");
  await page.keyboard.press("Alt+Enter");
  await expect(page.locator(".queue li")).toHaveCount(2);
  await expectAccessible(page, "running turn with a queue");

  // Remove the first entry: the focus moves to the next entry's button; removing that one, to the input box.
  await tabTo(page, page.getByRole("button", { name: "Remove queued: first queued" }), true);
  await expectVisibleFocus(page, "Tab to a queue entry");
  await page.keyboard.press("Enter");
  await expect(page.locator(".queue li")).toHaveCount(1);
  await expect(page.getByRole("button", { name: "Remove queued: second queued" })).toBeFocused();
  await expectVisibleFocus(page, "removing a queue entry");
  await page.keyboard.press("Enter");
  await expect(page.locator(".queue")).toHaveCount(0);
  await expect(box).toBeFocused();

  // Esc interrupts; Continue is offered.
  await page.keyboard.press("Escape");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "interrupted");
  await expect(page.getByText("The task was interrupted.")).toBeVisible();
  await expect(box).toBeFocused();
  await expectAccessible(page, "interrupted turn");

  // Continue (Shift+Tab to it) runs the turn again; its Stop button (Tab from the input box) stops it. Both
  // go away: the focus goes back to the input box each time.
  await tabTo(page, page.getByRole("button", { name: "Continue" }), true);
  await expectVisibleFocus(page, "Tab to Continue");
  await page.keyboard.press("Enter");
  await expect(page.getByText("The task was interrupted.")).toHaveCount(0);
  await expect(box).toBeFocused();
  await expect(page.locator(".msg.streaming .live-text")).toHaveText("Going on");
  await tabTo(page, page.getByRole("button", { name: "Stop" }));
  await expectVisibleFocus(page, "Tab to Stop");
  await page.keyboard.press("Enter");
  await expect(page.locator("[data-run-state]")).toHaveAttribute("data-run-state", "interrupted");
  await expect(box).toBeFocused();

  // An approval, in a new thread: Shift+Tab from the input box reaches its buttons; answered, the focus
  // goes back to the input box.
  await tabTo(page, page.getByRole("button", { name: "New thread" }), true);
  await page.keyboard.press("Enter");
  await expect(box).toBeFocused();
  await page.keyboard.type("please [write] a file");
  await page.keyboard.press("Enter");
  const approval = page.getByRole("group", { name: /Approve/ });
  await expect(approval).toBeVisible();
  await expectAccessible(page, "approval");
  await tabTo(page, approval.getByRole("button", { name: "Allow once" }), true);
  await expectVisibleFocus(page, "Tab to Allow once");
  await page.keyboard.press("Enter");
  await expect(approval).toHaveCount(0);
  await expect(box).toBeFocused();
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Done.");

  // An ask_user form: its answer field, then Enter submits it.
  await page.keyboard.type("[ask] me");
  await page.keyboard.press("Enter");
  const question = page.getByRole("group", { name: "The agent asks" });
  await expect(question).toContainText("Which colour?");
  await expectAccessible(page, "ask_user");
  await tabTo(page, question.getByLabel("Your answer"), true);
  await expectVisibleFocus(page, "Tab to the answer");
  await page.keyboard.type("blue");
  await page.keyboard.press("Enter");
  await expect(question).toHaveCount(0);
  await expect(box).toBeFocused();
  await expect(page.locator(".msg.assistant .markdown").last()).toHaveText("Blue it is.");
  await expectVisibleFocus(page, "answering the question");
});

test("the thread list by keyboard alone: skip links, arrows, open, fork, delete with its confirmation, search", async ({ page, keel }) => {
  await keel.startModel({
    responses: [respond("apples", [text("Apples are red.")]), respond("pears", [text("Pears are green.")]), respond("plums", [text("Plums are purple.")])],
  });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  const threads = page.getByRole("navigation", { name: "Threads" });
  const newThread = page.getByRole("button", { name: "New thread" });
  for (const fruit of ["apples", "pears", "plums"]) {
    await expect(box).toBeFocused();
    await page.keyboard.type(`tell me about ${fruit}`);
    await page.keyboard.press("Enter");
    await expect(page.locator(".msg.assistant .markdown")).toContainText(fruit === "apples" ? "red" : fruit === "pears" ? "green" : "purple");
    if (fruit !== "plums") {
      await tabTo(page, newThread, true);
      await page.keyboard.press("Enter");
    }
  }
  await expect(threads.locator(".thread-open")).toHaveCount(3);

  // The skip links come first and show when focused; "Skip to the threads" lands on the open thread's item.
  const skipToThreads = page.getByRole("link", { name: "Skip to the threads" });
  await tabTo(page, skipToThreads, true);
  await expect(skipToThreads).toBeInViewport();
  await expectVisibleFocus(page, "Tab to a skip link");
  await page.keyboard.press("Enter");
  const item = (name: RegExp) => threads.locator(".thread-open", { hasText: name });
  await expect(item(/plums/)).toBeFocused();
  await expectVisibleFocus(page, "skipping to the threads");
  // One item is in the Tab order (roving focus); the arrows, Home and End move between them.
  await expect(threads.locator('.thread-open[tabindex="0"]')).toHaveCount(1);
  await page.keyboard.press("ArrowDown");
  await expect(item(/pears/)).toBeFocused();
  await page.keyboard.press("End");
  await expect(item(/apples/)).toBeFocused();
  await page.keyboard.press("Home");
  await expect(item(/plums/)).toBeFocused();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowDown");
  await expect(item(/apples/)).toBeFocused();
  await expectVisibleFocus(page, "arrows in the thread list");
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Apples are red.");
  await expect(box).toBeFocused();

  // Fork at the user's message (its button, by Shift+Tab from the input box): the fork opens.
  await tabTo(page, page.locator(".msg.user").getByRole("button", { name: "Fork the thread at this message" }), true);
  await expectVisibleFocus(page, "Tab to a fork button");
  await page.keyboard.press("Enter");
  await expect(threads.locator("ul ul .thread-open")).toHaveAttribute("aria-current", "true");
  await expect(page.locator(".msg.assistant")).toHaveCount(0);
  await expect(box).toBeFocused();
  await expectAccessible(page, "thread tree");

  // Delete pears: Tab from its item to its delete button; Esc on "Delete?" takes it back; Enter confirms,
  // and the focus moves to the next thread in the list.
  const skipToBox = page.getByRole("link", { name: "Skip to the message box" });
  await tabTo(page, skipToThreads, true);
  await page.keyboard.press("Enter");
  await expect(threads.locator(".thread-open[aria-current]")).toBeFocused();
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowDown");
  await expect(item(/pears/)).toBeFocused();
  await page.keyboard.press("Tab");
  const deletePears = threads.getByRole("button", { name: /Delete thread .*pears/ });
  await expect(deletePears).toBeFocused();
  await page.keyboard.press("Enter");
  const confirm = threads.getByRole("button", { name: "Delete?" });
  await expect(confirm).toBeFocused();
  await expectVisibleFocus(page, "asking to delete");
  await expectAccessible(page, "delete confirmation");
  await page.keyboard.press("Escape");
  await expect(confirm).toHaveCount(0);
  await expect(deletePears).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(confirm).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(item(/pears/)).toHaveCount(0);
  await expect(item(/apples/).first()).toBeFocused();
  await expectVisibleFocus(page, "deleting a thread");

  // The Delete key on an item asks too; deleting the open thread moves the focus to the next item.
  await page.keyboard.press("End");
  await expect(item(/fork/)).toBeFocused();
  await page.keyboard.press("Delete");
  await expect(confirm).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(item(/fork/)).toHaveCount(0);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("New thread");
  await expectVisibleFocus(page, "deleting the open thread");
  await expect(threads.locator(".thread-open")).toHaveCount(2);

  // Search: Shift+Tab from the list to the search box, type, Down to the first result, Enter opens it.
  await tabTo(page, page.getByLabel("Search threads"), true);
  await expectVisibleFocus(page, "Tab to the search box");
  await page.keyboard.type("plum");
  await expect(threads.locator(".thread-open")).toHaveCount(1);
  await page.keyboard.press("ArrowDown");
  await expect(item(/plums/)).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Plums are purple.");
  await expect(box).toBeFocused();
  await expectAccessible(page, "search");

  // The other skip link goes to the input box.
  await tabTo(page, skipToBox, true);
  await expectVisibleFocus(page, "Tab to the other skip link");
  await page.keyboard.press("Enter");
  await expect(box).toBeFocused();
});
