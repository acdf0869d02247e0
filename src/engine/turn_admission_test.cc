#include "engine/turn_admission.h"

#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "testing/manual_clock.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"

namespace keel {
namespace {

using nlohmann::json;

class TurnAdmissionTest : public ::testing::Test {
 protected:
  TurnAdmission admission(bool vision) {
    ModelSettings settings;
    settings.vision = vision;
    models_ = std::make_unique<ModelCatalog>(std::vector<CatalogModel>{CatalogModel{.name = "m",
                                                                                    .provider_name = "p",
                                                                                    .settings = settings,
                                                                                    .transport = {},
                                                                                    .reasoning = false,
                                                                                    .provider = &provider_}},
                                             "m");
    return TurnAdmission({ids_, threads_, runs_, snapshots_, tools_, *models_});
  }
  testing::ManualClock clock_;
  testing::SequentialIdSource ids_;
  ThreadRepository threads_{clock_};
  RunRepository runs_{clock_};
  SnapshotRepository snapshots_{clock_};
  ToolRegistry tools_;
  testing::ScriptedProvider provider_;
  std::unique_ptr<ModelCatalog> models_;
};

TEST_F(TurnAdmissionTest, AnInputIsTextContentBlocksOrAContentObject) {
  TurnAdmission turns = admission(true);
  auto text = turns.input("hello");
  ASSERT_TRUE(text) << text.error().to_string();
  ASSERT_EQ(text->size(), 1u);
  EXPECT_EQ((*text)[0].text, "hello");
  auto blocks = turns.input(json{{"content", {{{"type", "text"}, {"text", "a"}}}}});
  ASSERT_TRUE(blocks) << blocks.error().to_string();
  EXPECT_EQ((*blocks)[0].text, "a");
  EXPECT_EQ(turns.input("").error().code(), codes::kInputInvalid);
  EXPECT_EQ(turns.input(json::array()).error().code(), codes::kInputInvalid);
  EXPECT_EQ(turns.input(42).error().code(), codes::kInputInvalid);
}

TEST_F(TurnAdmissionTest, AnImageIsRefusedForAModelWithoutVision) {
  const json image = {
      {"content", {{{"type", "image"}, {"mediaType", "image/png"}, {"data", "iVBORw0KGgo="}}}}};
  ASSERT_TRUE(admission(true).input(image)) << "the fixture is a valid image block";
  EXPECT_EQ(admission(false).input(image).error().code(), codes::kImageUnsupported);
}

}  // namespace
}  // namespace keel
