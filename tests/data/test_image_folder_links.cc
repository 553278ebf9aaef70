// The image-folder scan and links, FIFOs and single classes (issue 42): a link to a folder is never
// followed (`ln -s .. cat/up` labelled every dog a cat, `ln -s . cat/loop` counted each image 41
// times, two such links made the scan exponential), a link to an image file is; only regular
// files are opened (a FIFO named x.png blocked forever, --skip-bad-images too); a folder of one
// class is refused (it trained to loss 0, accuracy 1); an image linked into a second class is
// refused there (it had two labels).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "cli/cli_run.h"
#include "data/image_files.h"
#include "data/image_folder.h"
#include "error_of.h"

namespace vdnn {
namespace test_image_folder_links {

namespace fs = std::filesystem;

// root/<class>/img<i>.png, `per_class` 10 x 8 images of each class.
fs::path make_classes(const std::string& name, const std::vector<std::string>& classes, int per_class) {
  const fs::path root = test::temp_dir(name);
  for (const std::string& c : classes) {
    fs::create_directories(root / c);
    for (int i = 0; i < per_class; ++i)
      test::write_png((root / c / ("img" + std::to_string(i) + ".png")).string(), 10, 8, 3, test::gradient(10, 8, 3));
  }
  return root;
}

ImageFolderOptions options(bool skip_bad) {
  ImageFolderOptions o;
  o.channels = 3, o.height = 8, o.width = 8;
  o.cache_dir = "-";
  o.skip_bad_images = skip_bad;
  return o;
}

std::vector<int32_t> labels(int per_class, int classes) {
  std::vector<int32_t> out;
  for (int c = 0; c < classes; ++c) out.insert(out.end(), per_class, c);
  return out;
}

TEST(ImageFolderLinks, ALinkToTheParentFolderIsNotFollowedSoNoImageTakesAnotherLabel) {
  const fs::path root = make_classes("links_up", {"cat", "dog"}, 3);
  fs::create_directory_symlink("..", root / "cat" / "up");
  test::expect_error(
      [&] { ImageFolder(root, options(false)); },
      {(root / "cat" / "up").string(), "is a link to a folder, which the scan does not follow", "--skip-bad-images"});
  const ImageFolder f(root, options(true));
  EXPECT_EQ(f.labels(), labels(3, 2));  // was 3 cats + 3 dogs labelled cat, and the dogs again
  EXPECT_EQ(f.bad_images(), 1);
  fs::remove_all(root);
}

TEST(ImageFolderLinks, LinksBackIntoTheFolderNeitherRepeatImagesNorMakeTheScanExponential) {
  const fs::path root = make_classes("links_loop", {"cat", "dog"}, 2);
  fs::create_directory_symlink(".", root / "cat" / "loop");
  fs::create_directory_symlink(".", root / "cat" / "again");
  const auto start = std::chrono::steady_clock::now();
  const ImageFolder f(root, options(true));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(f.labels(), labels(2, 2));  // was each image counted at every depth the links allow
  EXPECT_EQ(f.bad_images(), 2);
  fs::remove_all(root);
}

TEST(ImageFolderLinks, AClassFolderThatIsALinkIsNamedAndLinksToImageFilesAreFollowed) {
  const fs::path root = make_classes("links_class", {"cat", "dog"}, 2);
  const fs::path elsewhere = make_classes("links_elsewhere", {"bird"}, 2);
  fs::create_directory_symlink(elsewhere / "bird", root / "bird");
  test::expect_error([&] { ImageFolder(root, options(false)); }, {(root / "bird").string(), "is a link to a folder"});
  fs::remove(root / "bird");
  fs::create_symlink(elsewhere / "bird" / "img0.png", root / "dog" / "linked.png");  // a file: followed
  const ImageFolder f(root, options(false));
  EXPECT_EQ(f.labels(), (std::vector<int32_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(f.bad_images(), 0);
  fs::remove_all(root);
  fs::remove_all(elsewhere);
}

// Neither copy keeps the image: the re-probe found --skip-bad-images keeping the link (cat/x.png ->
// dog/0.png, cat scanned first) and leaving out the real file, so a dog image trained as a cat.
TEST(ImageFolderLinks, AnImageLinkedIntoAnotherClassIsRefusedNotGivenASecondLabel) {
  const fs::path root = make_classes("links_across", {"cat", "dog"}, 3);
  fs::create_symlink(root / "cat" / "img0.png", root / "dog" / "also.png");    // a link
  fs::create_hard_link(root / "cat" / "img1.png", root / "dog" / "hard.png");  // the same inode
  test::expect_error([&] { ImageFolder(root, options(false)); },
                     {(root / "cat" / "img0.png").string(), "of class 'cat' is the same file as",
                      (root / "dog" / "also.png").string(), "of class 'dog'", "neither class", "--skip-bad-images"});
  const ImageFolder f(root, options(true));
  EXPECT_EQ(f.labels(), (std::vector<int32_t>{0, 1, 1, 1}));  // cat/img2; dog/img0..2: no copy of either file
  EXPECT_EQ(f.bad_images(), 4);
  fs::create_symlink(root / "dog" / "img0.png", root / "dog" / "same_class.png");  // one label: kept
  const ImageFolder g(root, options(true));
  EXPECT_EQ(g.labels(), (std::vector<int32_t>{0, 1, 1, 1, 1}));
  fs::remove_all(root);
}

// The scan must not wait for a FIFO's writer. If it did, the helper thread unblocks it after 20 s
// (opening the FIFO for writing and closing it), so the test fails instead of hanging.
TEST(ImageFolderLinks, AFifoNamedAsAnImageIsRefusedWithoutWaitingOrLeftOut) {
  const fs::path root = make_classes("links_fifo", {"cat", "dog"}, 2);
  const fs::path fifo = root / "dog" / "x.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread unblock([&] {
    for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  });
  const auto start = std::chrono::steady_clock::now();
  test::expect_error([&] { ImageFolder(root, options(false)); }, {fifo.string(), "is a FIFO, not a regular file"});
  const ImageFolder f(root, options(true));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  unblock.join();
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(f.labels(), labels(2, 2));
  EXPECT_EQ(f.bad_images(), 1);
  fs::remove_all(root);
}

TEST(ImageFolderLinks, AFolderOfOneClassIsRefused) {
  const fs::path root = make_classes("links_one_class", {"cat"}, 2);
  test::expect_error([&] { ImageFolder(root, options(false)); },
                     {"only class 'cat' has a readable image", "needs at least two classes with images"});
  fs::remove_all(root);
}

}  // namespace test_image_folder_links
}  // namespace vdnn
