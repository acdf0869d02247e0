// The model picker: keel configured with two models, each served by its own scripted model server. A thread
// starts on the default model, the picker switches it to the second one, the next turn is answered by the
// second server, and the choice is kept by keel (a reload shows it).
import { expectAccessible } from "./a11y";
import { expect, openApp, respond, test, text } from "./keel";

test("the model picker switches a thread to another configured model, and the choice persists", async ({ page, keel }) => {
  await keel.startModel({ responses: [respond(null, [text("Answer from the first server.")])] });
  await keel.addModel("second", { responses: [respond(null, [text("Answer from the second server.")])] });
  await keel.startKeel();
  await openApp(page, keel);
  const picker = page.getByLabel("Model");
  await expect(picker).toHaveValue("scripted");
  await expect(picker.locator("option")).toHaveText(["scripted — default", "second"]);

  const box = page.getByLabel("Message to keel");
  await box.fill("first question");
  await box.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText("Answer from the first server.");

  await picker.selectOption("second");
  await expect(picker).toHaveValue("second");
  await box.fill("second question");
  await box.press("Enter");
  await expect(page.locator(".msg.assistant .markdown")).toHaveText([
    "Answer from the first server.",
    "Answer from the second server.",
  ]);
  await expectAccessible(page, "model picker");

  await page.reload();
  await page.locator('[data-state="open"]').waitFor();
  await page.getByRole("navigation", { name: "Threads" }).getByRole("button", { name: "first question", exact: true }).click();
  await expect(page.locator(".msg.assistant .markdown")).toHaveCount(2);
  await expect(page.getByLabel("Model")).toHaveValue("second");
});
