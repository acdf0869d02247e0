#include "skills/front_matter.h"

#include <gtest/gtest.h>

#include "skills/skill_errors.h"

namespace keel::skills {
namespace {

TEST(FrontMatter, ReadsNameDescriptionAndBody) {
  auto doc = parse_skill_document(
      "---\nname: pdf-forms\ndescription: Fill PDF forms.\nlicense: MIT\n---\n# Steps\n", "a/SKILL.md");
  ASSERT_TRUE(doc) << doc.error().message();
  EXPECT_EQ(doc->name, "pdf-forms");
  EXPECT_EQ(doc->description, "Fill PDF forms.");
  EXPECT_EQ(doc->body, "# Steps\n");
}

TEST(FrontMatter, AcceptsCrlfLinesAndAByteOrderMark) {
  auto doc = parse_skill_document("\xEF\xBB\xBF---\r\nname: x\r\ndescription: y\r\n---\r\nbody", "f");
  ASSERT_TRUE(doc) << doc.error().message();
  EXPECT_EQ(doc->name, "x");
  EXPECT_EQ(doc->body, "body");
}

TEST(FrontMatter, CollapsesAMultiLineDescriptionToOneLine) {
  auto doc = parse_skill_document("---\nname: x\ndescription: |\n  Line one.\n  Line two.\n---\n", "f");
  ASSERT_TRUE(doc) << doc.error().message();
  EXPECT_EQ(doc->description, "Line one. Line two.");
}

TEST(FrontMatter, AFileWithoutFrontMatterIsACodedErrorNamingTheFile) {
  auto doc = parse_skill_document("# Just markdown\n", "/skills/x/SKILL.md");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code(), codes::kSkillBadFrontMatter);
  EXPECT_NE(doc.error().message().find("/skills/x/SKILL.md"), std::string::npos);
}

TEST(FrontMatter, AnUnclosedFrontMatterIsRefused) {
  auto doc = parse_skill_document("---\nname: x\ndescription: y\n", "f");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code(), codes::kSkillBadFrontMatter);
}

TEST(FrontMatter, BadYamlIsRefusedWithItsLine) {
  auto doc = parse_skill_document("---\nname: x\ndescription: [unclosed\n---\n", "/s/SKILL.md");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code(), codes::kSkillBadFrontMatter);
  EXPECT_NE(doc.error().message().find("/s/SKILL.md"), std::string::npos);
}

TEST(FrontMatter, FrontMatterThatIsNotAMappingIsRefused) {
  auto doc = parse_skill_document("---\n- a\n- b\n---\n", "f");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code(), codes::kSkillBadFrontMatter);
}

TEST(FrontMatter, MissingNameOrDescriptionIsAMissingField) {
  auto no_name = parse_skill_document("---\ndescription: y\n---\n", "f");
  ASSERT_FALSE(no_name);
  EXPECT_EQ(no_name.error().code(), codes::kSkillMissingField);
  auto no_description = parse_skill_document("---\nname: x\n---\n", "f");
  ASSERT_FALSE(no_description);
  EXPECT_EQ(no_description.error().code(), codes::kSkillMissingField);
  auto blank = parse_skill_document("---\nname: x\ndescription: \"  \"\n---\n", "f");
  ASSERT_FALSE(blank);
  EXPECT_EQ(blank.error().code(), codes::kSkillMissingField);
}

TEST(FrontMatter, ANameOutsideTheAlphabetIsRefused) {
  for (const char* name : {"Upper", "with space", "under_score", "\"x/../y\"",
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    auto doc = parse_skill_document(std::string("---\nname: ") + name + "\ndescription: y\n---\n", "f");
    ASSERT_FALSE(doc) << name;
    EXPECT_EQ(doc.error().code(), codes::kSkillBadName) << name;
  }
}

TEST(FrontMatter, ANonStringFieldIsRefused) {
  auto doc = parse_skill_document("---\nname: x\ndescription: {a: b}\n---\n", "f");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code(), codes::kSkillBadFrontMatter);
}

TEST(FrontMatter, OversizeDescriptionAndFrontMatterAreRefused) {
  FrontMatterLimits limits;
  limits.max_description_chars = 10;
  auto long_description = parse_skill_document("---\nname: x\ndescription: eleven chars\n---\n", "f", limits);
  ASSERT_FALSE(long_description);
  EXPECT_EQ(long_description.error().code(), codes::kSkillTooLarge);
  limits.max_front_matter_bytes = 32;
  auto long_front = parse_skill_document(
      "---\nname: x\ndescription: y\nother: " + std::string(100, 'z') + "\n---\n", "f", limits);
  ASSERT_FALSE(long_front);
  EXPECT_EQ(long_front.error().code(), codes::kSkillTooLarge);
}

TEST(FrontMatter, DeeplyNestedYamlIsAnErrorNotACrash) {
  const std::string nested = std::string(5000, '[') + std::string(5000, ']');
  auto doc = parse_skill_document("---\nname: x\ndescription: y\nz: " + nested + "\n---\n", "f");
  ASSERT_FALSE(doc);
}

}  // namespace
}  // namespace keel::skills
