// The thread tree: "edit and resend" makes a second branch of the thread (turn.submit{parentNodeId}), the
// "‹ 2 / 2 ›" switcher goes back and forth (thread.selectBranch), the selected branch survives a reload, and
// a second tab follows every change (thread.updated). Done by keyboard, as a person without a mouse would.
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text } from "./keel";

test("editing a message sends it again as a new branch, and the switcher goes back to the old one", async ({ page, context, keel }) => {
  await keel.startModel({
    responses: [respond("about apples", [text("Apples are red.")]), respond("about pears", [text("Pears are green.")])],
  });
  await keel.startKeel();
  await openApp(page, keel);
  const box = page.getByLabel("Message to keel");
  await box.fill("tell me about apples");
  await box.press("Enter");
  const reply = page.locator(".msg.assistant .markdown");
  await expect(reply).toHaveText("Apples are red.");
  await expect(page.locator(".branch-switch")).toHaveCount(0);

  // A second tab on the same thread follows what the first one does.
  const other = await context.newPage();
  await openApp(other, keel);
  await other.locator(".thread-open").first().click();
  await expect(other.locator(".msg.assistant .markdown")).toHaveText("Apples are red.");

  // Edit the first message: the editor holds its text.
  const edit = page.getByRole("button", { name: "Edit this message and send it again as a new branch" });
  await edit.focus();
  await page.keyboard.press("Enter");
  const editor = page.getByRole("textbox", { name: "Edit your message" });
  await expect(editor).toBeFocused();
  await expect(editor).toHaveValue("tell me about apples");
  await page.screenshot({ path: test.info().outputPath("editing.png") });
  await expectAccessible(page, "message editor");
  // Esc leaves it unchanged and gives the focus back to Edit.
  await page.keyboard.press("Escape");
  await expect(editor).toHaveCount(0);
  await expect(edit).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(editor).toBeFocused();
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type("tell me about pears");
  await page.keyboard.press("Enter");

  // The new branch: the edited message and its reply, 2 of 2.
  await expect(reply).toHaveText("Pears are green.");
  await expect(page.locator(".msg.user .plain")).toHaveText("tell me about pears");
  const position = page.locator(".branch-switch .branch-position");
  await expect(position).toHaveText("2 / 2");
  await expect(page.getByRole("group", { name: "Branch 2 of 2 at this message" })).toBeVisible();
  await expect(other.locator(".msg.assistant .markdown")).toHaveText("Pears are green.");
  await expect(other.locator(".branch-switch .branch-position")).toHaveText("2 / 2");
  await page.screenshot({ path: test.info().outputPath("branch-2-of-2.png") });

  // Back to the first branch: the old reply, intact; the focus stays on the switcher.
  const previous = page.getByRole("button", { name: "Previous branch" });
  await previous.focus();
  await page.keyboard.press("Enter");
  await expect(position).toHaveText("1 / 2");
  await expect(reply).toHaveText("Apples are red.");
  await expect(page.locator(".msg.user .plain")).toHaveText("tell me about apples");
  await expect(previous).toBeFocused();
  await expect(previous).toHaveAttribute("aria-disabled", "true");
  await expect(other.locator(".branch-switch .branch-position")).toHaveText("1 / 2");
  await expect(other.locator(".msg.assistant .markdown")).toHaveText("Apples are red.");

  // The selected branch is keel's: a reload shows the same one.
  await page.reload();
  await page.locator('[data-state="open"]').waitFor();
  await page.locator(".thread-open").first().click();
  await expect(reply).toHaveText("Apples are red.");
  await expect(position).toHaveText("1 / 2");
  const next = page.getByRole("button", { name: "Next branch" });
  await next.focus();
  await page.keyboard.press("Enter");
  await expect(position).toHaveText("2 / 2");
  await expect(reply).toHaveText("Pears are green.");
  await expectAccessible(page, "branch switcher");
});
