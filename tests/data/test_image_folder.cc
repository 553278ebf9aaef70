// data/image_decode.h, data/image_transform.h, data/image_folder.h and the loader's workers: PNG
// decodes to its exact pixels and JPEG close to them (also region- and DCT-scaled); every unreadable
// file is an error naming it; regions are torchvision's Resize + CenterCrop and RandomResizedCrop;
// the resampler keeps constants and mirrors; a folder's classes, labels and cached list; bad files
// refused or skipped and counted; the same batches whatever the number of loader threads.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "data/batch_loader.h"
#include "data/image_decode.h"
#include "data/image_files.h"
#include "data/image_folder.h"
#include "data/image_transform.h"
#include "data/synthetic.h"
#include "error_of.h"

namespace vdnn {
namespace test_image_folder {

namespace fs = std::filesystem;

RegionChooser whole() {
  return [](ImageSize s) { return ImageRegion{0, 0, static_cast<double>(s.width), static_cast<double>(s.height)}; };
}

void truncate_to_half(const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); }

// A PNG signature, an IHDR chunk for 65535 x 65535 RGB pixels and an empty IDAT, nothing else.
void write_huge_png_header(const fs::path& p) {
  std::string bytes("\x89PNG\r\n\x1a\n", 8);
  auto chunk = [&](const std::string& type_and_data) {
    const uint32_t length = static_cast<uint32_t>(type_and_data.size() - 4);
    const uLong crc =
        crc32(0, reinterpret_cast<const Bytef*>(type_and_data.data()), static_cast<uInt>(type_and_data.size()));
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((length >> shift) & 0xff));
    bytes += type_and_data;
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((crc >> shift) & 0xff));
  };
  chunk(std::string("IHDR") + std::string("\0\0\xff\xff\0\0\xff\xff\x08\x02\0\0\0", 13));
  chunk("IDAT");
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(ImageDecode, APngDecodesToItsExactPixelsInEitherChannelCount) {
  const fs::path dir = test::temp_dir("png_decode");
  const std::vector<uint8_t> rgb = test::gradient(13, 9, 3), grey = test::gradient(13, 9, 1);
  test::write_png(dir / "rgb.png", 13, 9, 3, rgb);
  test::write_png(dir / "grey.png", 13, 9, 1, grey);
  const DecodedImage a = decode_image(dir / "rgb.png", 3, whole(), 1, 1);
  EXPECT_EQ(a.width, 13);
  EXPECT_EQ(a.height, 9);
  EXPECT_EQ(a.pixels, rgb);
  EXPECT_EQ(read_image_size(dir / "rgb.png").width, 13);
  const DecodedImage b = decode_image(dir / "grey.png", 3, whole(), 1, 1);  // grey repeated
  for (size_t i = 0; i < grey.size(); ++i)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(b.pixels[i * 3 + c], grey[i]);
  EXPECT_EQ(decode_image(dir / "grey.png", 1, whole(), 1, 1).pixels, grey);
  // Colour to grey is PIL's luma; a PNG's alpha is dropped, its colour kept (PIL's convert('RGB')).
  const std::vector<uint8_t> red{255, 0, 0, 0, 0, 255}, see_through{10, 200, 30, 0, 90, 40, 220, 128};
  test::write_png(dir / "red.png", 2, 1, 3, red);
  EXPECT_EQ(decode_image(dir / "red.png", 1, whole(), 1, 1).pixels, (std::vector<uint8_t>{76, 29}));
  png_image rgba;
  std::memset(&rgba, 0, sizeof rgba);
  rgba.version = PNG_IMAGE_VERSION, rgba.width = 2, rgba.height = 1, rgba.format = PNG_FORMAT_RGBA;
  ASSERT_TRUE(png_image_write_to_file(&rgba, (dir / "alpha.png").c_str(), 0, see_through.data(), 0, nullptr));
  EXPECT_EQ(decode_image(dir / "alpha.png", 3, whole(), 1, 1).pixels, (std::vector<uint8_t>{10, 200, 30, 90, 40, 220}));
  fs::remove_all(dir);
}

TEST(ImageDecode, ACmykJpegBecomesRgbAsPilConvertsItWithOrWithoutAdobesMarker) {
  const fs::path dir = test::temp_dir("cmyk_decode");
  const int64_t w = 16, h = 8;
  std::vector<uint8_t> cmyk(w * h * 4);
  for (int64_t i = 0; i < w * h; ++i) {
    const uint8_t values[4] = {200, 120, 40, 180};  // stored as Adobe's files store it: inverted
    std::copy(values, values + 4, cmyk.begin() + i * 4);
  }
  test::write_jpeg(dir / "adobe.jpg", w, h, 4, cmyk, 100);
  test::write_jpeg(dir / "plain.jpg", w, h, 4, cmyk, 100, /*adobe_marker=*/false);
  for (const char* name : {"adobe.jpg", "plain.jpg"}) {  // PIL reads both as inverted
    const DecodedImage img = decode_image(dir / name, 3, whole(), w, h);
    for (int64_t i = 0; i < w * h; ++i) {  // R = c k / 255 with the stored values
      EXPECT_NEAR(img.pixels[i * 3 + 0], 200 * 180 / 255.0, 2) << name;
      EXPECT_NEAR(img.pixels[i * 3 + 1], 120 * 180 / 255.0, 2) << name;
      EXPECT_NEAR(img.pixels[i * 3 + 2], 40 * 180 / 255.0, 2) << name;
    }
  }
  fs::remove_all(dir);
}

TEST(ImageDecode, AColourJpegBecomesGreyByPilsLumaOfItsRgb) {
  const fs::path dir = test::temp_dir("jpeg_grey");
  const std::vector<uint8_t> px = test::gradient(32, 16, 3);
  test::write_jpeg(dir / "c.jpg", 32, 16, 3, px, 100);
  const DecodedImage rgb = decode_image(dir / "c.jpg", 3, whole(), 32, 16);
  const DecodedImage grey = decode_image(dir / "c.jpg", 1, whole(), 32, 16);
  for (int64_t i = 0; i < 32 * 16; ++i) {
    const uint8_t* p = rgb.pixels.data() + 3 * i;
    ASSERT_EQ(grey.pixels[i], (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16) << i;
  }
  fs::remove_all(dir);
}

TEST(ImageDecode, AJpegDecodesCloseToItsPixelsAndAtAReducedScaleForASmallSample) {
  const fs::path dir = test::temp_dir("jpeg_decode");
  const int64_t w = 256, h = 192;
  const std::vector<uint8_t> px = test::gradient(w, h, 3);
  test::write_jpeg(dir / "a.jpg", w, h, 3, px, 100);
  const DecodedImage full = decode_image(dir / "a.jpg", 3, whole(), w, h);
  ASSERT_EQ(full.scale, 1);
  ASSERT_EQ(full.pixels.size(), px.size());
  int worst = 0;
  for (size_t i = 0; i < px.size(); ++i) worst = std::max(worst, std::abs(int{full.pixels[i]} - int{px[i]}));
  EXPECT_LE(worst, 4);
  // A 16 x 12 sample of a 128 x 96 region: decoded at 1/4 (32 x 24 pixels, twice the sample),
  // the rows and columns around the region only; resampled, it is the full decode's sample.
  const ImageRegion region{64, 32, 128, 96};
  const DecodedImage part = decode_image(
      dir / "a.jpg", 3, [&](ImageSize) { return region; }, 16, 12);
  EXPECT_EQ(part.scale, 4);
  EXPECT_LE(part.x_offset, 64);
  EXPECT_LE(part.y_offset, 32);
  EXPECT_GE(part.x_offset + static_cast<double>(part.width) * part.scale, 64 + 128);
  EXPECT_GE(part.y_offset + static_cast<double>(part.height) * part.scale, 32 + 96);
  EXPECT_LT(part.width, w / 4);  // cropped, not the whole row
  DecodedImage reference = full;
  reference.region = region;
  const float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  std::vector<float> a(3 * 12 * 16), b(a.size());
  resample_region(reference, 16, 12, false, mean, std, a.data());
  resample_region(part, 16, 12, false, mean, std, b.data());
  double most = 0;
  for (size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(double{a[i]} - b[i]) * 255);
  EXPECT_LE(most, 3.0) << "levels of 255";
  fs::remove_all(dir);
}

TEST(ImageDecode, EveryUnreadableFileIsAnErrorNamingIt) {
  const fs::path dir = test::temp_dir("bad_images");
  const std::vector<uint8_t> px = test::gradient(160, 120, 3);
  test::write_jpeg(dir / "cut.jpg", 160, 120, 3, px);
  truncate_to_half(dir / "cut.jpg");
  test::write_png(dir / "cut.png", 160, 120, 3, px);
  truncate_to_half(dir / "cut.png");
  { std::ofstream(dir / "empty.jpg"); }
  { std::ofstream(dir / "text.jpg") << "not an image at all"; }
  fs::create_symlink(dir / "nowhere.png", dir / "dangling.png");
  write_huge_png_header(dir / "huge.png");
  EXPECT_EQ(read_image_size(dir / "cut.jpg").width, 160);  // the header is whole
  test::expect_error([&] { decode_image(dir / "cut.jpg", 3, whole(), 160, 120); },
                     {(dir / "cut.jpg").string(), "not a readable JPEG", "Premature end"});
  test::expect_error([&] { decode_image(dir / "cut.png", 3, whole(), 160, 120); },
                     {(dir / "cut.png").string(), "not a readable PNG"});
  test::expect_error([&] { read_image_size(dir / "empty.jpg"); }, {(dir / "empty.jpg").string(), "empty"});
  test::expect_error([&] { read_image_size(dir / "text.jpg"); }, {(dir / "text.jpg").string(), "not a JPEG or PNG"});
  test::expect_error([&] { read_image_size(dir / "dangling.png"); },
                     {(dir / "dangling.png").string(), "is a link to '", "nowhere.png', which does not exist"});
  // 65535 x 65535 claimed by a valid header: refused before any allocation.
  test::expect_error([&] { read_image_size(dir / "huge.png"); }, {(dir / "huge.png").string(), "65535 x 65535 pixels"});
  test::expect_error([&] { decode_image(dir / "huge.png", 3, whole(), 8, 8); }, {"at most 178956970 pixels"});
  fs::remove_all(dir);
}

TEST(ImageTransform, TheCenterRegionIsTorchvisionsResizeThenCenterCrop) {
  // Resize(64) of 487 x 365: 85 x 64; CenterCrop(64): left round(10.5) = 10 (half to even).
  ImageRegion r = center_region({487, 365}, 64, 64, 1.0);
  EXPECT_NEAR(r.x, 10 * 487.0 / 85, 1e-9);
  EXPECT_NEAR(r.width, 64 * 487.0 / 85, 1e-9);
  EXPECT_EQ(r.y, 0);
  EXPECT_NEAR(r.height, 365, 1e-9);
  // Resize(256) of 500 x 375 (a portrait one too), CenterCrop(224): offsets 58 (58.5 to even) and 16.
  r = center_region({500, 375}, 224, 224, kImageNetResizeRatio);
  EXPECT_NEAR(r.x, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.y, 16 * 375.0 / 256, 1e-9);
  EXPECT_NEAR(r.width, 224 * 500.0 / 341, 1e-9);
  r = center_region({375, 500}, 224, 224, kImageNetResizeRatio);
  EXPECT_NEAR(r.y, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(r.x, 16 * 375.0 / 256, 1e-9);
}

TEST(ImageTransform, RandomResizedCropsStayInsideInTorchvisionsRangesAndFollowTheSeed) {
  Rng rng(3, 9), again(3, 9);
  double smallest = 1, largest = 0;
  for (int i = 0; i < 2000; ++i) {
    const ImageRegion r = random_resized_crop_region({500, 375}, rng);
    const ImageRegion s = random_resized_crop_region({500, 375}, again);
    ASSERT_EQ(r.x, s.x);
    ASSERT_EQ(r.width, s.width);
    ASSERT_GE(r.x, 0);
    ASSERT_GE(r.y, 0);
    ASSERT_LE(r.x + r.width, 500);
    ASSERT_LE(r.y + r.height, 375);
    const double area = r.width * r.height / (500.0 * 375.0);
    ASSERT_GE(area, 0.079);  // 0.08, less the rounding of w and h
    ASSERT_GE(r.width / r.height, 0.74);
    ASSERT_LE(r.width / r.height, 1.35);
    smallest = std::min(smallest, area), largest = std::max(largest, area);
  }
  EXPECT_LT(smallest, 0.1);
  EXPECT_GT(largest, 0.9);
  // A sliver falls back to its center at the nearest ratio in range.
  const ImageRegion r = random_resized_crop_region({1000, 10}, rng);
  EXPECT_EQ(r.height, 10);
  EXPECT_EQ(r.width, 13);
  EXPECT_EQ(r.x, (1000 - 13) / 2);
}

TEST(ImageTransform, ResamplingKeepsAConstantMapsAnImageOntoItselfAndMirrors) {
  DecodedImage img;
  img.width = 50, img.height = 40, img.channels = 1;
  img.pixels.assign(50 * 40, 100);
  img.region = {3.5, 2.25, 41, 30};
  const float mean[1] = {0.25f}, std[1] = {0.5f};
  std::vector<float> out(12 * 9);
  resample_region(img, 12, 9, false, mean, std, out.data());
  for (float v : out) ASSERT_FLOAT_EQ(v, (100 / 255.f - 0.25f) / 0.5f);
  img.pixels = test::gradient(50, 40, 1);
  img.region = {0, 0, 50, 40};
  std::vector<float> same(50 * 40), mirrored(50 * 40);
  const float zero[1] = {0}, one[1] = {1};
  resample_region(img, 50, 40, false, zero, one, same.data());
  resample_region(img, 50, 40, true, zero, one, mirrored.data());
  for (int64_t y = 0; y < 40; ++y)
    for (int64_t x = 0; x < 50; ++x) {
      ASSERT_FLOAT_EQ(same[y * 50 + x] * 255, img.pixels[y * 50 + x]);
      ASSERT_EQ(mirrored[y * 50 + x], same[y * 50 + 49 - x]);
    }
}

// root/<class>/... with `per_class` 20 x 16 images of each of `classes`, PNG and JPEG alternating.
fs::path make_folder(const std::string& name, const std::vector<std::string>& classes, int per_class) {
  const fs::path root = test::temp_dir(name);
  for (size_t c = 0; c < classes.size(); ++c) {
    fs::create_directories(root / classes[c]);
    for (int i = 0; i < per_class; ++i) {
      std::vector<uint8_t> px = test::gradient(20 + i, 16, 3);
      for (uint8_t& p : px) p = static_cast<uint8_t>(p / 2 + 60 * c);  // each class its own brightness
      const std::string file = (root / classes[c] / ("img" + std::to_string(i))).string();
      if (i % 2)
        test::write_jpeg(file + ".jpg", 20 + i, 16, 3, px);
      else
        test::write_png(file + ".png", 20 + i, 16, 3, px);
    }
  }
  return root;
}

ImageFolderOptions small(const fs::path& cache) {
  ImageFolderOptions o;
  o.channels = 3, o.height = 12, o.width = 12;
  o.cache_dir = cache.string();
  return o;
}

std::string error_of_folder(const fs::path& root, const fs::path& cache) {
  return test::error_of([&] { ImageFolder(root, small(cache)); });
}

TEST(ImageFolder, ClassesAreSortedFoldersFilesAreFoundBelowThemAndOtherFilesIgnored) {
  const fs::path root = make_folder("folder_scan", {"zebra", "ant", "moth"}, 3);
  fs::create_directories(root / "ant" / "more");
  test::write_png(root / "ant" / "more" / "deep.PNG", 8, 8, 1, test::gradient(8, 8, 1));
  { std::ofstream(root / "ant" / "notes.txt") << "ignored"; }
  const fs::path cache = test::temp_dir("folder_scan_cache");
  ImageFolder f(root, small(cache));
  EXPECT_EQ(f.classes(), (std::vector<std::string>{"ant", "moth", "zebra"}));
  ASSERT_EQ(f.labels().size(), 10u);
  EXPECT_EQ(f.labels(), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_NE(f.path(3).find("deep.PNG"), std::string::npos) << f.path(3);
  Rng rng(1);
  std::vector<float> sample(3 * 12 * 12);
  int32_t label = -1;
  EXPECT_EQ(f.read(3, sample.data(), &label, {}, rng), 3);  // a grey PNG, repeated into RGB
  EXPECT_EQ(label, 0);
  for (int64_t i = 0; i < 144; ++i) ASSERT_NEAR(sample[i] * 0.229f + 0.485f, sample[144 + i] * 0.224f + 0.456f, 1e-5);
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(ImageFolder, AnEmptyClassOrAFileThatIsNoImageIsRefusedNamingItOrLeftOutAndCounted) {
  const fs::path root = make_folder("folder_bad", {"a", "b"}, 2);
  fs::create_directories(root / "c");
  const fs::path cache = test::temp_dir("folder_bad_cache");
  test::expect_error([&] { ImageFolder(root, small(cache)); }, {"class folder 'c'", "--skip-bad-images"});
  fs::remove(root / "c");
  { std::ofstream(root / "b" / "fake.jpg") << "<html>not found</html>"; }
  test::expect_error([&] { ImageFolder(root, small(cache)); },
                     {(root / "b" / "fake.jpg").string(), "not a JPEG or PNG"});
  fs::create_directories(root / "c");
  fs::create_symlink(root / "gone.png", root / "a" / "dangling.png");  // a link: read, not listed, fails
  ImageFolderOptions skip = small(cache);
  skip.skip_bad_images = true;
  const ImageFolder f(root, skip);
  EXPECT_EQ(f.bad_images(), 3);  // fake.jpg, dangling.png and the empty class
  EXPECT_EQ(f.classes().size(), 3u);
  EXPECT_EQ(f.labels().size(), 4u);
  fs::remove_all(root);
  fs::remove_all(cache);
}

// The one cache file in `cache` (the folder's list, named by a hash of its path).
fs::path only_file_in(const fs::path& cache) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(cache))
    if (e.is_regular_file()) files.push_back(e.path());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? cache / "missing" : files.front();
}

TEST(ImageFolder, ADamagedCacheIsScannedAgainNotTrusted) {
  const fs::path root = make_folder("folder_damaged_cache", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_damaged_cache_files");
  test::set_folder_times(root, 10);
  ImageFolder(root, small(cache));  // scanned and cached
  const fs::path file = only_file_in(cache);
  std::ifstream in(file, std::ios::binary);
  nlohmann::json j = nlohmann::json::from_cbor(in);
  in.close();
  j["labels"][0] = 7;  // two classes: a label no class folder has
  const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(j);
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const ImageFolder f(root, small(cache));
  EXPECT_FALSE(f.list_from_cache());
  EXPECT_EQ(f.labels(), (std::vector<int32_t>{0, 0, 1, 1}));
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(ImageFolder, AFifoAtTheCachesPathIsNeitherReadNorWritten) {
  const fs::path root = make_folder("folder_fifo_cache", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_fifo_cache_files");
  test::set_folder_times(root, 10);
  ImageFolder(root, small(cache));
  const fs::path file = only_file_in(cache);
  fs::remove(file);
  ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const ImageFolder f(root, small(cache));  // would block in open(2) if it read or wrote the FIFO
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_FALSE(f.list_from_cache());
  EXPECT_EQ(f.labels().size(), 4u);
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(ImageFolder, ClassNamesThatAreNotUtf8AreCachedByteForByte) {
  const std::string latin1 = "caf\xe9";  // "café" in Latin-1: not UTF-8
  const fs::path root = make_folder("folder_latin1_cache", {"a", latin1}, 2);
  const fs::path cache = test::temp_dir("folder_latin1_cache_files");
  test::set_folder_times(root, 10);
  EXPECT_FALSE(ImageFolder(root, small(cache)).list_from_cache());
  const ImageFolder cached(root, small(cache));
  EXPECT_TRUE(cached.list_from_cache());
  EXPECT_EQ(cached.classes(), (std::vector<std::string>{"a", latin1}));
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(ImageFolder, TheScannedListIsCachedAndScannedAgainWhenAFolderChanges) {
  const fs::path root = make_folder("folder_cache", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_cache_files");
  test::set_folder_times(root, 0);
  EXPECT_FALSE(ImageFolder(root, small(cache)).list_from_cache());  // just changed: racily clean, not cached
  EXPECT_FALSE(ImageFolder(root, small(cache)).list_from_cache());
  test::set_folder_times(root, 10);
  EXPECT_FALSE(ImageFolder(root, small(cache)).list_from_cache());  // scanned and cached
  const ImageFolder cached(root, small(cache));
  EXPECT_TRUE(cached.list_from_cache());
  EXPECT_EQ(cached.labels().size(), 4u);
  test::write_png(root / "b" / "new.png", 8, 8, 3, test::gradient(8, 8, 3));
  const ImageFolder rescanned(root, small(cache));
  EXPECT_FALSE(rescanned.list_from_cache());
  EXPECT_EQ(rescanned.labels().size(), 5u);
  // A bad file repaired in place (its folder's time kept) is found again: the cache is not used.
  { std::ofstream(root / "a" / "later.png") << "not yet"; }
  test::set_folder_times(root, 10);
  EXPECT_NE(error_of_folder(root, cache).find("later.png"), std::string::npos);  // scanned, cached
  ImageFolderOptions skip = small(cache);
  skip.skip_bad_images = true;
  EXPECT_TRUE(ImageFolder(root, skip).list_from_cache());                       // the folders' times still match
  test::write_png(root / "a" / "later.png", 8, 8, 3, test::gradient(8, 8, 3));  // its folder's time kept
  const ImageFolder repaired(root, small(cache));
  EXPECT_FALSE(repaired.list_from_cache());
  EXPECT_EQ(repaired.labels().size(), 6u);
  ImageFolderOptions none = small(cache);
  none.cache_dir = "-";
  EXPECT_FALSE(ImageFolder(root, none).list_from_cache());
  fs::remove_all(root);
  fs::remove_all(cache);
}

// Rewriting an image in place keeps its folder's time: the list's headers would describe the old
// image (the adaptation line `vdnn train` prints said "resized" of an image now at the model's size).
TEST(ImageFolder, AnImageRewrittenInPlaceIsScannedAgainNotDescribedFromTheCache) {
  const fs::path root = make_folder("folder_rewritten", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_rewritten_cache");
  test::set_folder_times(root, 10);
  const ImageAdaptation before = ImageFolder(root, small(cache)).adaptation();  // scanned, cached
  ASSERT_TRUE(ImageFolder(root, small(cache)).list_from_cache());
  const fs::path image = root / "b" / "img0.png";
  ASSERT_TRUE(fs::exists(image));
  const fs::file_time_type folder_time = fs::last_write_time(root / "b");
  test::write_png(image, 12, 12, 3, test::gradient(12, 12, 3));  // now at the model's size
  fs::last_write_time(root / "b", folder_time);                   // its folder's time as cached
  const ImageFolder again(root, small(cache));
  EXPECT_FALSE(again.list_from_cache());
  EXPECT_EQ(again.adaptation().resized, before.resized - 1);
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(ImageFolder, ATruncatedImageMetWhileLoadingStopsNamingItOrIsReplacedByTheNextWithItsLabel) {
  const fs::path root = make_folder("folder_truncated", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_truncated_cache");
  const fs::path cut = root / "a" / "img1.jpg";  // its header is intact: the scan keeps it
  test::write_jpeg(cut, 200, 160, 3, test::gradient(200, 160, 3));
  truncate_to_half(cut);
  Dataset d = load_image_folder(root, small(cache), "cut");
  BatchLoader loader(d, 4, /*shuffle=*/false, 1);
  loader.start_epoch(0);
  std::vector<float> x(4 * 3 * 12 * 12);
  std::vector<int32_t> y(4);
  int64_t n = 0;
  test::expect_error([&] { loader.next(x.data(), y.data(), &n); },
                     {cut.string(), "Premature end", "--skip-bad-images"});
  ImageFolderOptions skip = small(cache);
  skip.skip_bad_images = true;
  Dataset s = load_image_folder(root, skip, "cut");
  BatchLoader skipping(s, 4, /*shuffle=*/false, 1);
  skipping.start_epoch(0);
  ASSERT_TRUE(skipping.next(x.data(), y.data(), &n));
  EXPECT_EQ(y, (std::vector<int32_t>{0, 1, 1, 1}));  // sample 1 (class a) became sample 2 (class b)
  EXPECT_EQ(skipping.bad_images(), 1);
  fs::remove_all(root);
  fs::remove_all(cache);
}

// Every image of class a fails only when decoded (headers intact): with --skip-bad-images each
// was replaced by one of class b, and the run trained one class to loss 0. Now refused, naming it.
TEST(ImageFolder, AClassWhoseEveryImageFailsToDecodeIsRefusedNotTrainedAsAnother) {
  const fs::path root = make_folder("folder_all_cut", {"a", "b"}, 2);
  const fs::path cache = test::temp_dir("folder_all_cut_cache");
  fs::remove(root / "a" / "img0.png");
  for (const char* name : {"img0.jpg", "img1.jpg"}) {
    test::write_jpeg(root / "a" / name, 200, 160, 3, test::gradient(200, 160, 3));
    truncate_to_half(root / "a" / name);
  }
  ImageFolderOptions skip = small(cache);
  skip.skip_bad_images = true;
  Dataset s = load_image_folder(root, skip, "cut");
  BatchLoader skipping(s, 4, /*shuffle=*/false, 1);
  skipping.start_epoch(0);
  std::vector<float> x(4 * 3 * 12 * 12);
  std::vector<int32_t> y(4);
  int64_t n = 0;
  test::expect_error([&] { skipping.next(x.data(), y.data(), &n); },
                     {root.string(), "every image of class 'a' (2 file(s)) failed to decode",
                      "leaving only class 'b' with images that decode"});
  fs::remove_all(root);
  fs::remove_all(cache);
}

TEST(BatchLoaderThreads, RestartingOrDestroyingWithBatchesInFlightAndAViewHeldNeitherHangsNorMixesEpochs) {
  const Dataset d = make_synthetic(64, 1, 4, 4, 3, 1);
  for (int round = 0; round < 20; ++round) {
    BatchLoader loader(d, 4, /*shuffle=*/true, 9, {}, {}, 4);
    loader.start_epoch(0);
    BatchLoader::BatchView b;
    ASSERT_TRUE(loader.next(&b));
    loader.start_epoch(1, 3);  // the view is given up; batches 0..2 of epoch 1 are skipped
    std::vector<float> x(4 * 16);
    std::vector<int32_t> y(4);
    int64_t n = 0, batches = 0;
    BatchLoader reference(d, 4, true, 9);
    reference.start_epoch(1, 3);
    std::vector<float> rx(x.size());
    std::vector<int32_t> ry(4);
    while (loader.next(x.data(), y.data(), &n)) {
      ASSERT_TRUE(reference.next(rx.data(), ry.data(), &n));
      ASSERT_EQ(x, rx);
      ++batches;
      if (round % 2 && batches == 5) break;  // destroyed mid-epoch with workers busy
    }
    if (round % 2 == 0) EXPECT_EQ(batches, 16 - 3);
  }
}

// Every batch of two epochs, as bytes.
std::vector<float> two_epochs(const Dataset& d, int64_t batch, const Augmentation& a, int threads) {
  BatchLoader loader(d, batch, /*shuffle=*/true, 5, {}, a, threads);
  std::vector<float> all;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    BatchLoader::BatchView b;
    while (loader.next(&b)) {
      all.insert(all.end(), b.images, b.images + b.count * loader.sample_floats());
      for (int64_t i = 0; i < b.count; ++i) all.push_back(static_cast<float>(b.labels[i]));
    }
  }
  return all;
}

TEST(BatchLoaderThreads, BatchesAreTheSameForAnyNumberOfLoaderThreads) {
  const fs::path root = make_folder("folder_threads", {"a", "b", "c"}, 6);
  const fs::path cache = test::temp_dir("folder_threads_cache");
  const Dataset folder = load_image_folder(root, small(cache), "threads");
  const Augmentation imagenet = parse_augmentation("imagenet", "--augment");
  const std::vector<float> one = two_epochs(folder, 4, imagenet, 1);
  EXPECT_EQ(one, two_epochs(folder, 4, imagenet, 3));
  EXPECT_NE(one, two_epochs(folder, 4, {}, 3));  // the crops are drawn
  const Dataset memory = make_synthetic(40, 2, 6, 6, 3, 1);
  const Augmentation cifar = parse_augmentation("cifar", "--augment");
  EXPECT_EQ(two_epochs(memory, 8, cifar, 1), two_epochs(memory, 8, cifar, 4));
  test::expect_error([&] { BatchLoader(memory, 8, true, 1, {}, imagenet); }, {"--augment imagenet", "image folder"});
  test::expect_error([&] { BatchLoader(memory, 8, true, 1, {}, {}, 0); }, {"0 loader threads", "--data-threads"});
  fs::remove_all(root);
  fs::remove_all(cache);
}

}  // namespace test_image_folder
}  // namespace vdnn
